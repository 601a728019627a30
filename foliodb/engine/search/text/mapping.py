"""A ``search`` index definition, compiled: which values of a document it indexes, and how.

:func:`compile_definition` checks a definition (``mappings``, ``analyzer``,
``searchAnalyzer``, ``analyzers``, ``storedSource``) and returns a
:class:`TextDefinition`; :meth:`TextDefinition.analyze` turns a document into the
:class:`Entry` list the index stores: the document's own entry, then one per element of an
``embeddedDocuments`` array (its ``parent`` the index of the entry holding the array).

An entry holds, per *key*, terms with positions (``terms``), numbers (``numbers``) or, for
autocomplete keys, grams without positions (``grams``: :func:`autocomplete_grams`). A key is
a path and what was indexed there::

    path                 a string field, analyzed        path\\x00m:<name>   its multi analyzer
    path\\x00ac          autocomplete grams                path\\x00tok         a token (whole string)
    path\\x00b           a boolean ("true"/"false")        path\\x00o           an ObjectId (hex)
    path\\x00u           a UUID (canonical text)           path\\x00n           a number (float)
    path\\x00d           a date (milliseconds)             path\\x00glon/glat   a geo point
    \\x00exists          the paths holding an indexed value (one term each)

Values in arrays are indexed one by one (string positions 100 apart, so a phrase never spans
two). ``dynamic: true`` indexes strings (with the index's analyzer), numbers, dates,
booleans, ObjectIds, UUIDs and embedded documents, as MongoDB Search's dynamic mappings.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import Decimal128, Int64, ObjectId
from bson.binary import Binary

from foliodb.engine.search.text import analysis
from foliodb.engine.search.text.analysis import Analyzer, AnalyzerError
from foliodb.engine.search.text.synonyms import parse_synonyms
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.geometry import GeoError, is_geojson, parse_geometry

EXISTS = "\x00exists"
SHAPE = "\x00gs"  # a geo field's shapes (indexShapes): one term per GeoJSON geometry
EMBEDDED = "\x00embedded"  # an embedded entry's one term: its embeddedDocuments path
POSITION_GAP = 100
_NUMBERS = (int, float, Int64, Decimal128)
FIELD_TYPES = frozenset(
    {
        "autocomplete",
        "boolean",
        "date",
        "dateFacet",
        "document",
        "embeddedDocuments",
        "geo",
        "knnVector",
        "number",
        "numberFacet",
        "objectId",
        "string",
        "stringFacet",
        "token",
        "uuid",
        "vector",
    }
)


def invalid(place: str, problem: str) -> CommandError:
    return CommandError(ErrorCode.BadValue, f'Invalid index definition: "{place}" {problem}')


@dataclass(frozen=True)
class FieldSpec:
    """One type a field is indexed as."""

    type: str
    analyzer: Analyzer | None = None  # string and autocomplete: at index time
    search_analyzer: Analyzer | None = None  # ... and for queries
    multi: Mapping[str, FieldSpec] = field(default_factory=dict)
    nested: DocMapping | None = None  # document, embeddedDocuments
    min_grams: int = 2
    max_grams: int = 15
    tokenization: str = "edgeGram"
    fold: bool = True  # autocomplete foldDiacritics
    lowercase: bool = False  # token normalizer
    ignore_above: int | None = None
    shapes: bool = False  # geo indexShapes: the whole GeoJSON kept too, for geoShape
    stored: Any = False  # embeddedDocuments storedSource: what returnScope returns of an element
    vector: tuple[int, str] | None = None  # knnVector: (dimensions, similarity), for knnBeta


@dataclass(frozen=True)
class DocMapping:
    dynamic: bool
    fields: Mapping[str, tuple[FieldSpec, ...]]


@dataclass(slots=True)
class Entry:
    """What the index stores for one document (or one embedded document)."""

    parent: int  # index of the parent entry in the analyze() list; -1 for the document
    path: str  # "" for the document, the embeddedDocuments path for an embedded one
    terms: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    numbers: dict[str, list[float]] = field(default_factory=dict)
    # Autocomplete keys' grams, without positions (the key keeps none): each gram once per
    # string holding it, each one more towards the field's length, as terms at consecutive
    # positions counted; kept apart so segments take them in bulk (:mod:`.segments`).
    grams: dict[str, list[str]] = field(default_factory=dict)
    source: Mapping[str, Any] | None = None  # an embedded entry's element (returnScope returns it)


def _stored_spec(value: Any) -> bool:
    """Whether a ``storedSource`` is well formed: a boolean, or one of include / exclude
    naming an array of paths."""
    if isinstance(value, bool):
        return True
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    ((key, paths),) = value.items()
    return key in ("include", "exclude") and isinstance(paths, list) and all(isinstance(p, str) for p in paths)


def _number(value: Any) -> float:
    return float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)


def millis(value: datetime.datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return float(int(value.timestamp() * 1000))


def uuid_text(value: Any) -> str | None:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Binary) and value.subtype == 4 and len(value) == 16:
        return str(uuid.UUID(bytes=bytes(value)))
    return None


class TextDefinition:
    """A checked ``search`` definition: the analyzers, the mapping, what is stored."""

    def __init__(self, definition: Mapping[str, Any]) -> None:
        self.analyzers = dict(analysis.BUILT_IN)
        custom = definition.get("analyzers", [])
        if not isinstance(custom, list):
            raise invalid("definition.analyzers", "must be an array")
        for i, spec in enumerate(custom):
            try:
                made = analysis.custom(spec, f"definition.analyzers[{i}]")
            except AnalyzerError as exc:
                raise invalid(exc.place, exc.problem) from None
            self.analyzers[made.name] = made
        self.analyzer = self._analyzer(definition.get("analyzer", "lucene.standard"), "definition.analyzer")
        search = definition.get("searchAnalyzer")
        self.search_analyzer = self._analyzer(search, "definition.searchAnalyzer") if search else self.analyzer
        mappings = definition.get("mappings")
        if not isinstance(mappings, Mapping):
            raise invalid("definition.mappings", "is required and must be a document")
        self.mapping = self._mapping(mappings, "definition.mappings", top=True)
        try:
            self.synonyms = parse_synonyms(definition.get("synonyms", []), self.analyzers)
        except AnalyzerError as exc:
            raise invalid(exc.place, exc.problem) from None
        self.stored_source = definition.get("storedSource", False)
        if not isinstance(self.stored_source, bool | Mapping):
            raise invalid("definition.storedSource", "must be a boolean or a document")

    # -- checking ------------------------------------------------------------------------------

    def _analyzer(self, name: Any, place: str) -> Analyzer:
        if not isinstance(name, str) or name not in self.analyzers:
            raise invalid(place, f"names an unknown analyzer: {name!r}")
        return self.analyzers[name]

    def _mapping(self, spec: Mapping[str, Any], place: str, top: bool = False) -> DocMapping:
        for key in spec:
            if key not in ("dynamic", "fields") and not (not top and key == "type"):
                raise invalid(f"{place}.{key}", "is not a valid field")
        dynamic = spec.get("dynamic", False)
        if not isinstance(dynamic, bool) and not (isinstance(dynamic, Mapping) and "typeSet" in dynamic):
            raise invalid(f"{place}.dynamic", "must be a boolean or a document naming a typeSet")
        fields = spec.get("fields", {})
        if not isinstance(fields, Mapping):
            raise invalid(f"{place}.fields", "must be a document")
        if top and dynamic is False and not fields:
            raise invalid(place, "must set dynamic to true or define fields")
        out: dict[str, tuple[FieldSpec, ...]] = {}
        for name, value in fields.items():
            if isinstance(value, list):
                out[name] = tuple(self._field(one, f"{place}.fields.{name}[{i}]") for i, one in enumerate(value))
            else:
                out[name] = (self._field(value, f"{place}.fields.{name}"),)
        return DocMapping(bool(dynamic), out)

    def _field(self, spec: Any, place: str) -> FieldSpec:
        if not isinstance(spec, Mapping):
            raise invalid(place, "must be a document")
        kind = spec.get("type")
        if not isinstance(kind, str) or kind not in FIELD_TYPES:
            raise invalid(f"{place}.type", f"must be one of [{', '.join(sorted(FIELD_TYPES))}]")
        if kind == "embeddedDocuments" and "storedSource" in spec:
            stored = spec["storedSource"]
            if not _stored_spec(stored):
                raise invalid(f"{place}.storedSource", "must be a boolean, {include: [paths]} or {exclude: [paths]}")
            rest = {k: v for k, v in spec.items() if k != "storedSource"}
            return FieldSpec(kind, nested=self._mapping(rest, place), stored=stored)
        if kind in ("document", "embeddedDocuments"):
            return FieldSpec(kind, nested=self._mapping(spec, place))
        if kind == "string":
            return self._string(spec, place)
        if kind == "autocomplete":
            low = _integer(spec.get("minGrams", 2), f"{place}.minGrams")
            high = _integer(spec.get("maxGrams", 15), f"{place}.maxGrams")
            if low > high:
                raise invalid(f"{place}.minGrams", "must be less than or equal to maxGrams")
            tokenization = spec.get("tokenization", "edgeGram")
            if tokenization not in ("edgeGram", "rightEdgeGram", "nGram"):
                raise invalid(f"{place}.tokenization", "must be one of [edgeGram, rightEdgeGram, nGram]")
            fold = spec.get("foldDiacritics", True)
            if not isinstance(fold, bool):
                raise invalid(f"{place}.foldDiacritics", "must be a boolean")
            base = self._analyzer(spec.get("analyzer", "lucene.standard"), f"{place}.analyzer")
            return FieldSpec(kind, base, base, min_grams=low, max_grams=high, tokenization=str(tokenization), fold=fold)
        if kind in ("token", "stringFacet"):
            normalizer = spec.get("normalizer", "none")
            if normalizer not in ("none", "lowercase"):
                raise invalid(f"{place}.normalizer", "must be one of [lowercase, none]")
            return FieldSpec("token", lowercase=normalizer == "lowercase")
        if kind == "numberFacet":
            return FieldSpec("number")
        if kind == "dateFacet":
            return FieldSpec("date")
        if kind == "knnVector":
            dimensions = spec.get("dimensions")
            if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= 8192:
                raise invalid(f"{place}.dimensions", "is required and must be an integer from 1 to 8192")
            similarity = spec.get("similarity")
            if similarity not in ("euclidean", "cosine", "dotProduct"):
                raise invalid(f"{place}.similarity", "is required and must be one of [cosine, dotProduct, euclidean]")
            return FieldSpec(kind, vector=(dimensions, str(similarity)))
        if kind == "geo":
            shapes = spec.get("indexShapes", False)
            if not isinstance(shapes, bool):
                raise invalid(f"{place}.indexShapes", "must be a boolean")
            return FieldSpec(kind, shapes=shapes)
        return FieldSpec(kind)

    def _string(self, spec: Mapping[str, Any], place: str) -> FieldSpec:
        analyzer = self._analyzer(spec.get("analyzer", self.analyzer.name), f"{place}.analyzer")
        search = spec.get("searchAnalyzer")
        searcher = self._analyzer(search, f"{place}.searchAnalyzer") if search else analyzer
        multi = spec.get("multi", {})
        if not isinstance(multi, Mapping):
            raise invalid(f"{place}.multi", "must be a document")
        ignore = spec.get("ignoreAbove")
        return FieldSpec(
            "string",
            analyzer,
            searcher,
            multi={name: self._string(sub, f"{place}.multi.{name}") for name, sub in multi.items()},
            ignore_above=None if ignore is None else _integer(ignore, f"{place}.ignoreAbove"),
        )

    # -- what a query asks ---------------------------------------------------------------------

    def specs_at(self, path: str) -> tuple[tuple[FieldSpec, ...], bool]:
        """The field specs mapped at ``path`` and whether a dynamic mapping covers it."""
        mapping: DocMapping | None = self.mapping
        parts = path.split(".")
        dynamic = False
        for i, part in enumerate(parts):
            if mapping is None:
                return (), dynamic
            dynamic = mapping.dynamic or (dynamic and not mapping.fields)
            specs = mapping.fields.get(part)
            if specs is None:
                # A dotted field name may be mapped whole ("a.b"), as MongoDB Search allows.
                rest = ".".join(parts[i:])
                if rest in mapping.fields:
                    return mapping.fields[rest], dynamic
                return (), dynamic
            if i == len(parts) - 1:
                return specs, dynamic
            nested = [s.nested for s in specs if s.nested is not None]
            mapping = nested[0] if nested else None
        return (), dynamic

    def embedded_stored(self, path: str) -> Any:
        """The ``storedSource`` of the embeddedDocuments field at ``path`` (False: none)."""
        specs, _ = self.specs_at(path)
        return next((s.stored for s in specs if s.type == "embeddedDocuments"), False)

    def embedded_paths(self) -> set[str]:
        out: set[str] = set()

        def walk(mapping: DocMapping, prefix: str) -> None:
            for name, specs in mapping.fields.items():
                for spec in specs:
                    if spec.nested is not None:
                        if spec.type == "embeddedDocuments":
                            out.add(prefix + name)
                        walk(spec.nested, f"{prefix}{name}.")

        walk(self.mapping, "")
        return out

    # -- analyzing documents -------------------------------------------------------------------

    def analyze(self, doc: Mapping[str, Any]) -> list[Entry]:
        entries = [Entry(-1, "")]
        self._walk(self.mapping, doc, "", entries, 0)
        return entries

    def _walk(self, mapping: DocMapping, doc: Mapping[str, Any], prefix: str, entries: list[Entry], at: int) -> None:
        for name, value in doc.items():
            path = prefix + name
            specs = mapping.fields.get(name)
            if specs is not None:
                for spec in specs:
                    self._index(spec, path, value, entries, at)
            elif mapping.dynamic:
                self._dynamic(path, value, entries, at)

    def _dynamic(self, path: str, value: Any, entries: list[Entry], at: int) -> None:
        for one in _flat(value):
            if isinstance(one, Mapping):
                self._walk(DocMapping(True, {}), one, path + ".", entries, at)
            elif isinstance(one, str):
                _text(entries[at], path, self.analyzer, one)
            elif isinstance(one, bool):
                _term(entries[at], path, "\x00b", "true" if one else "false")
            elif isinstance(one, _NUMBERS):
                _num(entries[at], path, "\x00n", _number(one))
            elif isinstance(one, datetime.datetime):
                _num(entries[at], path, "\x00d", millis(one))
            elif isinstance(one, ObjectId):
                _term(entries[at], path, "\x00o", str(one))
            elif (text := uuid_text(one)) is not None:
                _term(entries[at], path, "\x00u", text)

    def _index(self, spec: FieldSpec, path: str, value: Any, entries: list[Entry], at: int) -> None:
        kind = spec.type
        if kind == "embeddedDocuments":
            assert spec.nested is not None
            for one in _flat(value):
                if isinstance(one, Mapping):
                    entries.append(Entry(at, path, {EMBEDDED: [(path, 0)]}, source=one))
                    _term(entries[at], path, "", None)
                    self._walk(spec.nested, one, path + ".", entries, len(entries) - 1)
            return
        if kind == "geo" and spec.shapes:
            for one in _flat(value):
                if (text := shape_term(one)) is not None:
                    _term(entries[at], path, SHAPE, text)
        if kind == "geo" and (point := geo_point(value)) is not None:
            _num(entries[at], path, "\x00glon", point[0])
            _num(entries[at], path, "\x00glat", point[1])
            return
        for one in _flat(value):
            if kind == "document":
                if isinstance(one, Mapping):
                    assert spec.nested is not None
                    self._walk(spec.nested, one, path + ".", entries, at)
            elif kind == "string" and isinstance(one, str):
                if spec.ignore_above is not None and len(one) > spec.ignore_above:
                    continue
                assert spec.analyzer is not None
                _text(entries[at], path, spec.analyzer, one)
                for name, sub in spec.multi.items():
                    assert sub.analyzer is not None
                    _text(entries[at], f"{path}\x00m:{name}", sub.analyzer, one, exists=path)
            elif kind == "autocomplete" and isinstance(one, str):
                _grams(entries[at], path, autocomplete_grams(spec, one))
            elif kind == "token" and isinstance(one, str):
                _term(entries[at], path, "\x00tok", one.lower() if spec.lowercase else one)
            elif kind == "number" and isinstance(one, _NUMBERS) and not isinstance(one, bool):
                _num(entries[at], path, "\x00n", _number(one))
            elif kind == "date" and isinstance(one, datetime.datetime):
                _num(entries[at], path, "\x00d", millis(one))
            elif kind == "boolean" and isinstance(one, bool):
                _term(entries[at], path, "\x00b", "true" if one else "false")
            elif kind == "objectId" and isinstance(one, ObjectId):
                _term(entries[at], path, "\x00o", str(one))
            elif kind == "uuid" and (text := uuid_text(one)) is not None:
                _term(entries[at], path, "\x00u", text)
            elif kind == "geo" and (point := geo_point(one)) is not None:
                _num(entries[at], path, "\x00glon", point[0])
                _num(entries[at], path, "\x00glat", point[1])


def autocomplete_grams(spec: FieldSpec, text: str) -> list[str]:
    """The grams an autocomplete field stores for a string: its analyzer's tokens (lower-cased,
    folded unless ``foldDiacritics`` is false) joined by spaces, then, ``minGrams``..``maxGrams``
    long, edge grams: the prefixes of the run from each word on (so a word's prefixes, and
    words in sequence from any word); right-edge grams: the suffixes of the run up to each
    word; n-grams: every substring."""
    assert spec.analyzer is not None
    words = [t for t, _ in spec.analyzer.terms(text)]
    if spec.fold:
        words = [analysis.fold_diacritics(w) for w in words]
    words = [w.lower() for w in words]
    low, high = spec.min_grams, spec.max_grams
    run = " ".join(words)
    out: list[str] = []
    if spec.tokenization == "nGram":
        out = [run[s : s + k] for s in range(len(run)) for k in range(low, high + 1) if s + k <= len(run)]
    else:
        at, bounds = 0, []  # each word's (start, end) in the run
        for word in words:
            bounds.append((at, at + len(word)))
            at += len(word) + 1
        for start, end in bounds:
            if spec.tokenization == "edgeGram":  # the run from this word on: its prefixes
                out += [run[start : start + k] for k in range(low, min(high, len(run) - start) + 1)]
            else:  # the run up to this word: its suffixes
                out += [run[end - k : end] for k in range(low, min(high, end) + 1)]
    return list(dict.fromkeys(out))


def geo_point(value: Any) -> tuple[float, float] | None:
    """(longitude, latitude) of a GeoJSON Point or a legacy [lon, lat] pair."""
    if isinstance(value, Mapping) and value.get("type") == "Point":
        value = value.get("coordinates")
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return float(value[0]), float(value[1])
    return None


def shape_term(value: Any) -> str | None:
    """The term a ``geo`` field with ``indexShapes`` keeps for a GeoJSON geometry: its JSON
    (None for anything that is not a valid geometry, skipped as mongot skips it)."""
    if not is_geojson(value):
        return None
    try:
        parse_geometry(value)
        return json.dumps(value, separators=(",", ":"), default=str)
    except (GeoError, TypeError, ValueError):
        return None


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, list):
        for item in value:
            yield from _flat(item)
    else:
        yield value


def _integer(value: Any, place: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | Int64) or int(value) != value or value < 0:
        raise invalid(place, "must be a non-negative integer")
    return int(value)


def _exists(entry: Entry, path: str) -> None:
    exists = entry.terms.setdefault(EXISTS, [])
    if not exists or exists[-1][0] != path:
        exists.append((path, len(exists)))


def _text(entry: Entry, key: str, analyzer: Analyzer, text: str, exists: str | None = None) -> None:
    terms = entry.terms.setdefault(key, [])
    base = terms[-1][1] + POSITION_GAP if terms else 0
    terms.extend((term, base + position) for term, position in analyzer.terms(text))
    _exists(entry, exists or key)


def _term(entry: Entry, path: str, suffix: str, term: str | None) -> None:
    if term is not None:
        terms = entry.terms.setdefault(path + suffix, [])
        terms.append((term, terms[-1][1] + 1 if terms else 0))
    _exists(entry, path)


def _grams(entry: Entry, path: str, grams: list[str]) -> None:
    """The grams of one string, in :attr:`Entry.grams` (see there)."""
    if grams:
        entry.grams.setdefault(path + "\x00ac", []).extend(grams)
        _exists(entry, path)


def _num(entry: Entry, path: str, suffix: str, value: float) -> None:
    entry.numbers.setdefault(path + suffix, []).append(value)
    _exists(entry, path)


def compile_definition(definition: Mapping[str, Any]) -> TextDefinition:
    return TextDefinition(definition)
