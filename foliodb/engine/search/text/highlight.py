"""``highlight``: where a returned document matched, as ``{$meta: "searchHighlights"}`` shows it.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/highlighting/

For each highlighted path (a field name, ``{wildcard}``, or an array of them) and each
string value there, the value is analyzed again with the field's analyzer, with offsets;
tokens whose term the search matched on that field are *hits*. A value with hits is one
passage: ``{path, texts: [{value, type: "hit" | "text"}...], score}``, the texts covering
the value in order, score the share of its tokens that hit. At most ``maxNumPassages``
(default 5) passages per path, best first; only the first ``maxCharsToExamine`` (default
500,000) characters of a value are examined.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import search_error


def _paths(spec: Any, doc: Mapping[str, Any]) -> list[str]:
    items = spec if isinstance(spec, list) else [spec]
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("wildcard"), str):
            out += [p for p in _string_paths(doc, "") if fnmatch.fnmatchcase(p, item["wildcard"])]
        else:
            raise search_error('"highlight.path" must be a field name, {wildcard} or an array of them')
    return list(dict.fromkeys(out))


def _string_paths(doc: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for name, value in doc.items():
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, str):
                yield prefix + name
            elif isinstance(one, Mapping):
                yield from _string_paths(one, f"{prefix}{name}.")


def _values(doc: Any, parts: list[str]) -> Iterator[str]:
    if not parts:
        for one in doc if isinstance(doc, list) else [doc]:
            if isinstance(one, str):
                yield one
        return
    for one in doc if isinstance(doc, list) else [doc]:
        if isinstance(one, Mapping) and parts[0] in one:
            yield from _values(one[parts[0]], parts[1:])


def highlights(
    definition: TextDefinition, spec: Mapping[str, Any], doc: Mapping[str, Any], matched: Mapping[str, set[str]]
) -> list[dict[str, Any]]:
    if "path" not in spec:
        raise search_error('"highlight.path" is required')
    limit = int(spec.get("maxCharsToExamine", 500_000))
    passages_per_path = int(spec.get("maxNumPassages", 5))
    out: list[dict[str, Any]] = []
    for path in _paths(spec["path"], doc):
        terms = matched.get(path, set())
        if not terms:
            continue
        specs, _ = definition.specs_at(path)
        analyzers = [s.analyzer for s in specs if s.type == "string" and s.analyzer is not None]
        analyzer = analyzers[0] if analyzers else definition.analyzer
        passages: list[tuple[float, dict[str, Any]]] = []
        for value in _values(doc, path.split(".")):
            text = value[:limit]
            tokens = analyzer.tokens(text)
            hits = [t for t in tokens if t.text in terms]
            if not hits:
                continue
            texts, at = [], 0
            for hit in hits:
                if hit.start < at:
                    continue
                if hit.start > at:
                    texts.append({"value": text[at : hit.start], "type": "text"})
                texts.append({"value": text[hit.start : hit.end], "type": "hit"})
                at = hit.end
            if at < len(text):
                texts.append({"value": text[at:], "type": "text"})
            score = len(hits) / max(1, len(tokens))
            passages.append((score, {"path": path, "texts": texts, "score": score}))
        passages.sort(key=lambda p: -p[0])
        out += [passage for _, passage in passages[:passages_per_path]]
    return out
