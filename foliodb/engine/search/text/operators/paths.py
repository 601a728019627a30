"""Which index keys (and search analyzers) an operator's ``path`` names.

``path`` is a field name, ``{value: <field>, multi: <name>}`` (a string field's
alternate analyzer), ``{wildcard: <glob>}`` (every indexed string field matching it), or an
array of those. A string field's key is its path, analyzed at query time with its
``searchAnalyzer`` (else its ``analyzer``, else the index's); a field under a dynamic
mapping uses the index's. A path the index holds no strings for matches nothing.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.text.analysis import Analyzer
from foliodb.engine.search.text.mapping import FieldSpec, TextDefinition
from foliodb.engine.search.text.operators import Run, search_error


class Paths:
    def __init__(self, spec: Any, place: str, definition: TextDefinition) -> None:
        self.fixed: list[tuple[str, str, Analyzer]] = []  # (key, path, analyzer)
        self.globs: list[str] = []
        self.definition = definition
        items = spec if isinstance(spec, list) else [spec]
        if not items:
            raise search_error(f'"{place}" must not be empty')
        for i, item in enumerate(items):
            where = f"{place}[{i}]" if isinstance(spec, list) else place
            if isinstance(item, str):
                self._field(item)
            elif isinstance(item, Mapping) and "wildcard" in item and isinstance(item["wildcard"], str):
                self.globs.append(item["wildcard"])
            elif (
                isinstance(item, Mapping) and isinstance(item.get("value"), str) and isinstance(item.get("multi"), str)
            ):
                self._multi(item["value"], item["multi"], where)
            else:
                raise search_error(f'"{where}" must be a field name, {{value, multi}} or {{wildcard}}')

    def _field(self, path: str) -> None:
        specs, dynamic = self.definition.specs_at(path)
        strings = [s for s in specs if s.type == "string"]
        if strings:
            analyzer = strings[0].search_analyzer
            assert analyzer is not None
            self.fixed.append((path, path, analyzer))
        elif dynamic and not specs:
            self.fixed.append((path, path, self.definition.search_analyzer))

    def _multi(self, path: str, name: str, place: str) -> None:
        specs, _ = self.definition.specs_at(path)
        subs: list[FieldSpec] = [s.multi[name] for s in specs if s.type == "string" and name in s.multi]
        if not subs:
            raise search_error(f'"{place}.multi" names no multi analyzer of "{path}": {name}')
        analyzer = subs[0].search_analyzer
        assert analyzer is not None
        self.fixed.append((f"{path}\x00m:{name}", path, analyzer))

    def keys(self, run: Run) -> list[tuple[str, str, Analyzer]]:
        """(key, field path, search analyzer) of each string field named."""
        out = list(self.fixed)
        if self.globs:
            seen = {key for key, _, _ in out}
            every = {k for segment in run.reader.segments for k in segment.key_names() if "\x00" not in k}
            for key in sorted(every - seen):
                if any(fnmatch.fnmatchcase(key, glob) for glob in self.globs):
                    specs, _ = self.definition.specs_at(key)
                    strings = [s.search_analyzer for s in specs if s.type == "string" and s.search_analyzer]
                    out.append((key, key, strings[0] if strings else self.definition.search_analyzer))
        return out

    def fields(self) -> list[str]:
        return [path for _, path, _ in self.fixed]
