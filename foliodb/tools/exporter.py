"""``foliodb export``: a collection in mongoexport's formats, from any
pymongo-compatible collection.

JSON (``mongoexport/json.go``): one document a line in Extended JSON,
relaxed by default or canonical, compact (no spaces), non-ASCII characters
as they are; ``json_array`` writes ``[`` documents separated by ``,`` ``]``;
``pretty`` indents with tabs. Documents keep their field order.

CSV (``mongoexport/csv.go``): ``fields`` are required; a header line of the
field names (unless ``no_header_line``), then one line a document, quoted as
Go's ``encoding/csv`` quotes (a field holding a comma, a quote, a line break,
or starting with a space). A dotted field reaches into embedded documents and
arrays (``items.0.sku``); a missing field or a null is empty. A value is
written as mongo-tools' legacy Extended JSON prints it
(``common/json/csv_format.go``): ``ObjectId(<hex>)``, dates as
``2006-01-02T15:04:05.000Z``, binary as upper-case hex, regular expressions
as ``/pattern/options``, numbers as Go prints them (``1e+06``), embedded
documents and arrays as legacy JSON (``{"a":{ "$numberLong": "1" }}``).

The query, sort, skip and limit are the find's; documents stream from the
cursor.

Manual: https://www.mongodb.com/docs/database-tools/mongoexport/
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.binary import Binary
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef

from foliodb.tools.fields import MISSING, get_path
from foliodb.tools.progress import SILENT, Reporter

FORMATS = ("json", "csv")
_DECODE: CodecOptions[dict[str, Any]] = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
_MAX_FORMATTABLE_MS = 32535215999000  # mongo-tools prints later dates as {"$date": {"$numberLong": ...}}


@dataclass
class ExportOptions:
    type: str = "json"
    json_format: str = "relaxed"  # or "canonical"
    json_array: bool = False
    pretty: bool = False
    fields: Sequence[str] | None = None
    no_header_line: bool = False
    query: Mapping[str, Any] | None = None
    sort: Mapping[str, Any] | None = None
    skip: int = 0
    limit: int = 0


def check_options(options: ExportOptions) -> None:
    if options.type not in FORMATS:
        raise ValueError(f"invalid output type {options.type!r}, choose 'json' or 'csv'")
    if options.json_format not in ("relaxed", "canonical"):
        raise ValueError(f"invalid JSON format {options.json_format!r}, choose 'relaxed' or 'canonical'")
    if options.type == "csv":
        if not options.fields:
            raise ValueError("CSV mode requires a field list")
        if options.json_array or options.pretty:
            raise ValueError("--jsonArray and --pretty only apply to JSON output")


def export_documents(collection: Any, out: IO[str], options: ExportOptions, reporter: Reporter = SILENT) -> int:
    """Write the collection's matching documents to ``out``; return how many."""
    check_options(options)
    projection = {name: 1 for name in options.fields} if options.fields else None
    coll = collection.with_options(codec_options=_DECODE)
    cursor = coll.find(options.query or {}, projection, skip=options.skip, limit=options.limit)
    if options.sort:
        cursor = cursor.sort(list(options.sort.items()))
    total = None if options.query or options.limit or options.skip else coll.estimated_document_count()
    count = 0
    label = f"{collection.database.name}.{collection.name}"
    with reporter.task(label, total) as task:
        if options.type == "csv":
            assert options.fields is not None
            if not options.no_header_line:
                out.write(csv_line(list(options.fields)))
            for doc in cursor:
                out.write(csv_line([csv_cell(get_path(doc, name)) for name in options.fields]))
                count += 1
                task.advance(1)
        else:
            json_options = json_util.JSONOptions(
                json_mode=json_util.JSONMode.CANONICAL
                if options.json_format == "canonical"
                else json_util.JSONMode.RELAXED
            )
            if options.json_array:
                out.write("[")
            for doc in cursor:
                if count and options.json_array:
                    out.write(",")
                if count and options.pretty:
                    out.write("\n")
                if options.pretty:
                    text = json_util.dumps(doc, json_options=json_options, indent="\t", ensure_ascii=False)
                else:
                    text = json_util.dumps(doc, json_options=json_options, separators=(",", ":"), ensure_ascii=False)
                out.write(text)
                if not options.json_array and not options.pretty:
                    out.write("\n")
                count += 1
                task.advance(1)
            if options.json_array:
                out.write("]\n")
            if options.pretty:
                out.write("\n")
    return count


# -- CSV --------------------------------------------------------------------------------------


def csv_line(cells: list[str]) -> str:
    """Go's csv.Writer: quote a cell only when it needs it; "\\n" ends the line."""
    return ",".join(_quote(cell) for cell in cells) + "\n"


def _quote(cell: str) -> str:
    needs = cell == "\\." or any(c in cell for c in ',"\r\n') or (cell[:1].isspace() if cell else False)
    return '"' + cell.replace('"', '""') + '"' if needs else cell


def csv_cell(value: Any) -> str:
    """A value as mongoexport writes it in a CSV cell."""
    if value is MISSING or value is None:
        return ""
    if isinstance(value, dict | list):
        return legacy_json(value)
    return _legacy_text(value)


def _legacy_text(value: Any) -> str:
    """fmt's %v of mongo-tools' legacy Extended JSON values (their String methods)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):  # int32 and Int64 print as plain numbers
        return str(int(value))
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):  # JavaScript code (bson.Code) prints as its source too
        return str(value)
    if isinstance(value, ObjectId):
        return f"ObjectId({value})"
    if isinstance(value, datetime.datetime | DatetimeMS):
        ms = _millis(value)
        return _iso(ms) if ms < _MAX_FORMATTABLE_MS else f'{{ "$date": {{ "$numberLong" : "{ms}" }}}}'
    if isinstance(value, Binary | bytes):
        data = bytes(value)
        if isinstance(value, Binary) and value.subtype == 2:
            data = data[4:]  # the old binary subtype repeats the length
        return data.hex().upper()
    if isinstance(value, Regex):
        return f"/{value.pattern}/{_flags(value)}"
    if isinstance(value, Timestamp):
        return f'{{ "$timestamp": {{ "t": {value.time}, "i": {value.inc} }} }}'
    if isinstance(value, Decimal128):
        return str(value)
    if isinstance(value, MinKey):
        return "$MinKey"
    if isinstance(value, MaxKey):
        return "$MaxKey"
    if isinstance(value, DBRef):
        return legacy_json(value)
    return str(value)


def legacy_json(value: Any) -> str:
    """mongo-tools' json.Marshal of a legacy Extended JSON value (compact, Go's escaping)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Int64):
        return f'{{ "$numberLong": "{int(value)}" }}'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "+Infinity" if value > 0 else "-Infinity"
        text = go_float(value)
        return text + ".0" if value == int(value) and "e" not in text and "N" not in text else text
    if isinstance(value, Code):
        scope = f', "$scope": {legacy_json(dict(value.scope))} ' if value.scope is not None else ""
        return f'{{ "$code": {_go_string(str(value))}{scope}}}'
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, DBRef):
        db = f', "$db": "{value.database}" ' if value.database else ""
        return f'{{ "$ref": "{value.collection}", "$id": {legacy_json(value.id)}{db}}}'
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_go_string(str(k))}:{legacy_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(legacy_json(v) for v in value) + "]"
    if isinstance(value, ObjectId):
        return f'{{ "$oid": "{value}" }}'
    if isinstance(value, datetime.datetime | DatetimeMS):
        ms = _millis(value)
        if ms < _MAX_FORMATTABLE_MS:
            return f'{{ "$date": "{_iso(ms)}" }}'
        return f'{{ "$date": {{ "$numberLong" : "{ms}" }}}}'
    if isinstance(value, Binary | bytes):
        subtype = value.subtype if isinstance(value, Binary) else 0
        return f'{{ "$binary": "{_b64(bytes(value))}", "$type": "{subtype:x}" }}'
    if isinstance(value, Regex):
        return f'{{ "$regex": {_go_string(str(value.pattern))}, "$options": "{_flags(value)}" }}'
    if isinstance(value, Timestamp):
        return f'{{ "$timestamp": {{ "t": {value.time}, "i": {value.inc} }} }}'
    if isinstance(value, Decimal128):
        return f'{{ "$numberDecimal" : "{value}" }}'
    if isinstance(value, MinKey):
        return '{ "$minKey": 1 }'
    if isinstance(value, MaxKey):
        return '{ "$maxKey": 1 }'
    return _go_string(str(value))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _go_string(text: str) -> str:
    """Go's encoding/json string: HTML characters and U+2028/9 escaped."""
    encoded = json.dumps(text, ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        encoded = encoded.replace(char, f"\\u{ord(char):04x}")
    return encoded


_FLAG_LETTERS = ((2, "i"), (4, "l"), (8, "m"), (16, "s"), (32, "u"), (64, "x"))  # re flags as BSON writes them


def _flags(regex: Regex[Any]) -> str:
    if isinstance(regex.flags, str):
        return regex.flags
    return "".join(letter for bit, letter in _FLAG_LETTERS if regex.flags & bit)


def _millis(value: datetime.datetime | DatetimeMS) -> int:
    if isinstance(value, DatetimeMS):
        return int(value)
    return int(DatetimeMS(value))


def _iso(ms: int) -> str:
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 64), which fmt's %v uses too: the
    shortest digits that read back as the value, in exponent form (two exponent
    digits at least) when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    shortest = decimal.Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    assert isinstance(shortest.exponent, int)
    exponent = shortest.exponent + len(digits) - 1  # of the first digit
    sign = "-" if shortest.sign else ""
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    if exponent + 1 >= len(digits):
        return sign + digits + "0" * (exponent + 1 - len(digits))
    return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
