"""The documentation stays true: the compatibility table is what
scripts/gen_compat.py generates from the registries today, every relative
link in README.md and docs/*.md points to a file (and heading) that exists,
every Python example in the docs runs and prints what it says, every command
of README.md and docs/guide.md runs, the set-up commands agree with what CI
runs, and the rows of docs/differences.md still describe FolioDB.

A document's Python blocks run in order, in one namespace, in an empty
directory (so ``MongoClient("./data")`` starts empty). What a block prints must be
what its comments say: a ``print(...)`` line's trailing ``# text`` and the
comment-only lines right after it are its expected output, line by line.

A document's shell commands (each part of an ``&&`` chain) run in order, in
another directory where ``./data`` already holds a small ``shop`` database,
each bounded by a timeout: ``foliodb`` ones as ``python -m foliodb`` from this
checkout and must succeed; ``foliodb serve`` runs on a free port (``--port 0``,
so no test takes 27017) until it says it is listening, then stops. Commands of
other programs (pip, venv, mongosh, mongorestore, the suite itself) are listed
in ``NOT_RUN`` with the reason, so a new one fails until someone decides.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
MARKDOWN = [ROOT / "README.md", *DOCS]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```python\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_compat", ROOT / "scripts" / "gen_compat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_compatibility_table_is_current() -> None:
    generated = _load_generator().render()
    committed = (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
    assert committed == generated, "docs/compatibility.md is stale: run python scripts/gen_compat.py"


def _relative_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    # Links inside code are examples, not links.
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _broken(path: Path, target: str) -> bool:
    file_part, _, anchor = target.partition("#")
    linked = (path.parent / file_part).resolve() if file_part else path
    if not linked.exists():
        return True
    return bool(anchor) and linked.suffix == ".md" and anchor not in _anchors(linked)


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    assert [target for target in _relative_links(path) if _broken(path, target)] == []


def test_link_checker_sees_links_and_anchors() -> None:
    # If the patterns broke, the test above would pass vacuously.
    guide = ROOT / "docs" / "guide.md"
    links = _relative_links(guide)
    assert "differences.md" in links and "#performance" in links
    assert _broken(guide, "#no-such-heading") and _broken(guide, "no-such-file.md")
    assert "accumulators-group-bucket-bucketauto" in _anchors(ROOT / "docs" / "compatibility.md")


def _python_blocks(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code")) for m in _FENCE.finditer(text)]


def test_guide_has_examples() -> None:
    assert len(_python_blocks(ROOT / "docs" / "guide.md")) >= 10


def expected_output(code: str) -> list[str]:
    """The output a block's comments promise (see the module docstring)."""
    expected: list[str] = []
    after_print = False
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("print("):
            inline = re.search(r"\)\s+# ?(.*)$", line)
            if inline:
                expected.append(inline.group(1))
            after_print = True
        elif stripped.startswith("#") and after_print:
            expected.append(stripped[1:].removeprefix(" "))
        else:
            after_print = False
    return expected


def test_expected_output_reads_comments() -> None:
    code = "x = 1  # not output\nprint(x)  # 1\nfor i in (2, 3):\n    print(i)\n# 2\n# 3\ny = 4\n# a remark\n"
    assert expected_output(code) == ["1", "2", "3"]


@pytest.mark.parametrize("path", [p for p in MARKDOWN if _python_blocks(p)], ids=lambda p: p.name)
def test_python_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The examples show explain output, which depends on the index paths being on.
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    try:
        for line, code in _python_blocks(path):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
            assert out.getvalue().splitlines() == expected_output(code), f"{path.name}, block at line {line}"
    finally:
        # Release dbpath locks even when an example fails half-way.
        for value in namespace.values():
            close = getattr(value, "close", None)
            if type(value).__name__ == "MongoClient" and callable(close):
                close()


# -- shell commands -------------------------------------------------------------------

_SH_FENCE = re.compile(r"^```sh\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
COMMAND_DOCS = [ROOT / "README.md", ROOT / "docs" / "guide.md"]
COMMAND_TIMEOUT = (
    300  # seconds, per command: it catches a hung command; `foliodb lab` alone took over 60 on a loaded 2-core machine
)
NOT_RUN = {
    "python3 -m venv": "creates a virtual environment (the set-up line; see test_setup_commands_agree_with_ci)",
    ". .venv/bin/activate": "activates it",
    "python -m pip install": "installs packages from an index",
    "python -m pytest": "the test suite itself",
    "mongosh": "MongoDB's shell, a separate program (tests/clients/ drive it against foliodb serve)",
    "mongorestore": "MongoDB's database tools, a separate program",
    "foliodb advise --uri mongodb://db.example/": "needs a MongoDB deployment at db.example",
    "foliodb sync mongodb://127.0.0.1:27017 ": "needs the application's foliodb serve and a MongoDB replica set",
}


def shell_commands(path: Path) -> list[tuple[int, str]]:
    """``(line, command)`` for each command of the document's ``sh`` blocks, comments dropped."""
    text = path.read_text(encoding="utf-8")
    out = []
    for match in _SH_FENCE.finditer(text):
        first = text.count("\n", 0, match.start("code")) + 1
        for offset, line in enumerate(match.group("code").splitlines()):
            words = shlex.split(line, comments=True)
            if not words:
                continue
            for part in " ".join(shlex.quote(w) if w != "&&" else w for w in words).split(" && "):
                out.append((first + offset, part.strip()))
    return out


def _not_run(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def test_shell_commands_are_seen() -> None:
    # If the fence pattern broke, the test below would pass vacuously.
    commands = [c for _, c in shell_commands(ROOT / "README.md")]
    assert "foliodb demo ./foliodb-demo" in commands and "python -m pytest" in commands
    assert len(shell_commands(ROOT / "docs" / "guide.md")) >= 10


def _seed(directory: Path) -> None:
    import foliodb

    with foliodb.MongoClient(str(directory / "data")) as client:
        client.shop.orders.insert_many(
            [{"_id": i, "user_id": i % 7, "status": ["pending", "shipped"][i % 2], "total": 10 * i} for i in range(40)]
        )


def _run_command(command: str, cwd: Path) -> None:
    words = shlex.split(command)
    argv = [sys.executable, "-m", "foliodb", *words[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if words[1:2] == ["serve"]:
        argv = [w for i, w in enumerate(argv) if w != "--port" and argv[i - 1] != "--port"] + ["--port", "0"]
        server = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert server.stdout is not None
            first = server.stdout.readline().decode()
            assert "waiting for connections" in first, (
                f"{command}: {first}{server.stderr.read().decode() if server.stderr else ''}"
            )
        finally:
            server.terminate()
            server.communicate(timeout=COMMAND_TIMEOUT)
        return
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, f"{command}: exit {done.returncode}: {done.stderr.decode()[-2000:]}"


@pytest.mark.parametrize("path", COMMAND_DOCS, ids=lambda p: p.name)
def test_shell_commands_run(path: Path, tmp_path: Path) -> None:
    _seed(tmp_path)
    for line, command in shell_commands(path):
        if _not_run(command):
            continue
        assert command.startswith("foliodb "), f"{path.name}:{line}: {command!r} is neither run nor in NOT_RUN"
        _run_command(command, tmp_path)


def test_setup_commands_agree_with_ci() -> None:
    """The README's two set-up lines install what .ci/run installs and run what it runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = _SH_FENCE.search(readme)
    assert first_block is not None
    setup = [
        " ".join(shlex.split(line, comments=True)).split(" && ") for line in first_block.group("code").splitlines()
    ]
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci = [shlex.split(line) for line in ci_script if line.startswith("python3 ")]
    # Besides them CI only removes the archived wheel an older install may have left (see .ci/run).
    ci = [line for line in ci if line[:4] != ["python3", "-m", "pip", "uninstall"] or line[-1] != "quickjs"]
    assert [w for w in ci[0] if w != "-q"] == ["python3", "-m", "pip", "install", "-e", ".[test]"]
    assert ci[1] == ["python3", "-m", "pytest"]
    assert len(setup) == 2
    for chain in setup:
        assert chain[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "python -m pip install -e .[test]"]
    assert (setup[0][3:], setup[1][3:]) == (["foliodb demo ./foliodb-demo"], ["python -m pytest"])


def test_install_extras_exist() -> None:
    """Every ``pip install '.[extra]'`` in the docs names an extra pyproject.toml defines."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = set()
    for path in [*MARKDOWN, ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md"]:
        for group in re.findall(r"pip install[^\n]*?\.\[([a-z,]+)\]", path.read_text(encoding="utf-8")):
            named.update(group.split(","))
    assert named and named <= extras, named - extras


# -- docs/differences.md ------------------------------------------------------------
# Each row of the table was checked by hand; these checks keep the rows true. When
# one fails, FolioDB changed (perhaps a bug got fixed): update the row, then the check.


def _code(fn: Any) -> Any:
    from pymongo.errors import OperationFailure

    try:
        fn()
    except OperationFailure as exc:
        return exc.code
    return None


def _row_collation(db: Any) -> None:
    db.c.insert_many([{"s": "abc"}, {"s": "ABC"}])
    strength2 = {"locale": "en", "strength": 2}
    assert db.c.count_documents({"s": "abc"}, collation=strength2) == 2
    assert len(list(db.c.aggregate([{"$match": {"s": "abc"}}], collation=strength2))) == 2
    db.create_collection("folded", collation=strength2)
    db.folded.insert_one({"_id": "a", "s": "x"})
    assert _code(lambda: db.folded.insert_one({"_id": "A"})) == 11000  # the _id index takes the collation
    assert db.folded.find_one({"_id": "A"})["_id"] == "a"
    assert db.folded.find_one({"_id": "A"}, collation={"locale": "simple"}) is None
    db.folded.create_index("s", collation=strength2)
    assert db.folded.index_information()["s_1"]["collation"]["version"] == "57.1"
    plan = db.folded.find({"s": "X"}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexBounds"]["s"][0].startswith("[CollationKey(0x")


def _row_sessions(db: Any) -> None:
    from bson import Timestamp

    with db.client.start_session() as session:
        session.with_transaction(lambda s: (db.c.insert_one({"t": 1}, session=s), db.d.insert_one({}, session=s)))
    assert db.c.count_documents({"t": 1}) == 1
    assert db.client.options.retry_writes is False
    old = {"level": "snapshot", "atClusterTime": Timestamp(1, 0)}
    assert _code(lambda: db.command("find", "c", readConcern=old)) == 239


def _row_session_listing(db: Any) -> None:
    with db.client.start_session() as session:
        db.c.find_one({}, session=session)
        listed = db.client.config.system.sessions.aggregate([{"$listSessions": {"allUsers": True}}])
        assert session.session_id["id"] in [doc["_id"]["id"] for doc in listed]
    assert list(db.client.config.system.sessions.find()) == []
    assert len(list(db.client.admin.aggregate([{"$listLocalSessions": {}}]))) >= 1  # its own implicit session


def _row_change_streams(db: Any) -> None:
    with db.c.watch() as stream:
        db.c.insert_one({"x": 1})
        event = stream.next()
    assert event["operationType"] == "insert" and set(event["_id"]) == {"_data"}
    db.c.insert_one({"_id": "big", "a": "x" * (8 << 20)})
    with db.c.watch([{"$changeStreamSplitLargeEvent": {}}], full_document="updateLookup") as split:
        # The update's event holds the new 7 MB field twice (the change, the whole document): over 16 MB.
        db.c.update_one({"_id": "big"}, {"$set": {"b": "y" * (7 << 20)}})
        first = split.next()
        fragments = [first] + [split.next() for _ in range(first["splitEvent"]["of"] - 1)]
    assert [f["splitEvent"]["fragment"] for f in fragments] == list(range(1, len(fragments) + 1))
    assert len(fragments) >= 2


def _row_geo(db: Any) -> None:
    db.c.create_index([("loc", "2dsphere")])
    db.c.insert_one({"loc": {"type": "Point", "coordinates": [0, 0]}})
    assert db.c.find_one({"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 1]}}}) is not None
    assert _code(lambda: db.c.insert_one({"loc": [200, 0]})) == 16755
    assert _code(lambda: db.d.create_index([("loc", "2dsphere")], **{"2dsphereIndexVersion": 2})) == 238
    crs = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
    # Clockwise around [1, 2] x [1, 2]: under strict winding, the rest of the earth.
    big = {"type": "Polygon", "coordinates": [[[1, 1], [1, 2], [2, 2], [2, 1], [1, 1]]], "crs": crs}
    assert db.c.find_one({"loc": {"$geoWithin": {"$geometry": big}}}) is not None
    assert db.c.find_one({"loc": {"$geoIntersects": {"$geometry": big}}}) is not None
    assert _code(lambda: db.c.insert_one({"loc": big})) == 16755
    assert _code(lambda: db.c.find_one({"loc": {"$geoWithin": {"$geometry": {**big, "type": "MultiPolygon"}}}})) == 2
    assert _code(lambda: db.c.create_index([("h", "geoHaystack")])) == 238


def _row_text_in_or(db: Any) -> None:
    db.c.insert_one({"t": "mongodb schema"})
    db.c.create_index([("t", "text")])
    query = {"$text": {"$search": "mongodb"}}
    assert db.c.distinct("t", query) == ["mongodb schema"]
    (scored,) = db.c.aggregate([{"$match": query}, {"$project": {"_id": 0, "s": {"$meta": "textScore"}}}])
    assert scored["s"] > 0
    assert db.c.update_many(query, {"$set": {"x": 1}}).modified_count == 1
    assert db.c.count_documents(query) == 1
    assert _code(lambda: db.c.find_one({"$or": [query, {"x": 2}]})) == 291  # x has no index
    db.c.create_index("x")
    assert db.c.find_one({"$or": [query, {"x": 2}]}, {"_id": 0, "t": 1}) == {"t": "mongodb schema"}
    assert _code(lambda: db.c.find_one({"$nor": [query]})) == 2


def _row_text_languages(db: Any) -> None:
    db.c.insert_one({"t": "und die Katze", "language": "german"})
    db.c.create_index([("t", "text")])
    assert db.c.find_one({"$text": {"$search": "die", "$language": "german"}}) is None  # a German stop word
    assert db.c.find_one({"$text": {"$search": "Katzen", "$language": "german"}}) is not None  # stemmed


def _row_percentile(db: Any) -> None:
    db.c.insert_many([{"x": x} for x in range(1, 11)])
    spec = {"input": "$x", "p": [0.25, 0.5], "method": "approximate"}
    (out,) = db.c.aggregate([{"$group": {"_id": None, "p": {"$percentile": spec}}}])
    assert out["p"] == [3.0, 5.0]  # ranks ceil(2.5)-1 = 2 and ceil(5)-1 = 4 of 1..10


def _row_javascript(db: Any) -> None:
    db.c.insert_many([{"k": "a", "n": 1}, {"k": "a", "n": 2}, {"k": "b", "n": 5}])
    assert [d["n"] for d in db.c.find({"$where": "this.n > 1"}, {"_id": 0})] == [2, 5]
    out = db.command(
        "mapReduce", "c", map="function() { emit(this.k, this.n) }", reduce="(k, v) => Array.sum(v)", out={"inline": 1}
    )
    assert out["results"] == [{"_id": "a", "value": 3.0}, {"_id": "b", "value": 5.0}]


def _row_capped(db: Any) -> None:
    db.create_collection("capped", capped=True, size=4096, max=2)
    db.capped.insert_many([{"i": i} for i in range(3)])
    assert [d["i"] for d in db.capped.find()] == [1, 2]
    db.plain.insert_many([{"i": i} for i in range(3)])
    db.command("convertToCapped", "plain", size=4096)
    assert db.plain.options() == {"capped": True, "size": 4096}
    assert _code(lambda: db.command("reIndex", "plain")) == 20  # the replica-set persona refuses it


def _row_timeseries(db: Any) -> None:
    import datetime

    db.create_collection("series", timeseries={"timeField": "at", "metaField": "m"})
    db.series.insert_many([{"at": datetime.datetime(2024, 1, 1, 0, i), "m": 1} for i in range(3)])
    (bucket,) = db["system.buckets.series"].find()
    assert bucket["control"]["version"] == 1 and list(bucket["data"]["at"]) == ["0", "1", "2"]
    assert _code(lambda: db.series.find_one_and_delete({})) == 166
    list(db.series.aggregate([{"$out": {"db": db.name, "coll": "copy", "timeseries": {"timeField": "at"}}}]))
    assert db.copy.count_documents({}) == 3
    with db.client.start_session() as session:
        session.start_transaction()
        assert _code(lambda: db.series.insert_one({"at": datetime.datetime(2024, 1, 1)}, session=session)) == 263
        session.abort_transaction()
    db.create_collection("clustered", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.clustered.insert_many([{"_id": 2}, {"_id": 1}])
    assert [d["_id"] for d in db.clustered.find()] == [1, 2]
    plan = db.clustered.find({"_id": {"$gte": 1}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "CLUSTERED_IXSCAN" and plan["minRecord"] == 1
    assert next(iter(db.clustered.list_indexes()))["clustered"] is True


def _row_write_concern(db: Any) -> None:
    from pymongo import WriteConcern

    assert db.get_collection("c", write_concern=WriteConcern(w="majority")).insert_one({}).acknowledged
    assert _code(lambda: db.get_collection("c", write_concern=WriteConcern(w=2)).insert_one({})) == 100


def _row_covered(db: Any) -> None:
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_many([{"a": 1, "b": 2}, {"a": 2, "b": 3}])
    projection = {"_id": 0, "a": 1, "b": 1}
    covered = db.c.find({"a": 1}, projection).explain()["queryPlanner"]["winningPlan"]["stage"]
    db.c.insert_one({"a": 3, "b": [1, 2]})  # now multikey: never covered
    uncovered = db.c.find({"a": 1}, projection).explain()["queryPlanner"]["winningPlan"]["stage"]
    assert (covered, uncovered) == ("PROJECTION_COVERED", "PROJECTION_SIMPLE")


def _row_plan_cache(db: Any) -> None:
    db.c.insert_many([{"a": i % 5, "b": i % 3} for i in range(60)])
    db.c.create_index("a")
    db.c.create_index("b")
    list(db.c.find({"a": 1, "b": 1}))  # two candidates: a trial, then an entry
    (entry,) = db.c.aggregate([{"$planCacheStats": {}}])
    assert entry["isActive"] is True and len(entry["queryHash"]) == len(entry["planCacheKey"]) == 8
    db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=["b_1"])
    plan = db.c.find({"a": 2, "b": 2}).hint("a_1").explain()["queryPlanner"]
    assert plan["indexFilterSet"] and plan["winningPlan"]["inputStage"]["indexName"] == "b_1"


def _row_search_indexes(db: Any) -> None:
    from pymongo.operations import SearchIndexModel

    db.v.insert_one({"_id": 1, "e": [1.0, 0.0]})
    definition = {"fields": [{"type": "vector", "path": "e", "numDimensions": 2, "similarity": "cosine"}]}
    db.v.create_search_index(SearchIndexModel(definition=definition, name="vec", type="vectorSearch"))
    stage = {"index": "vec", "path": "e", "queryVector": [1, 0], "numCandidates": 5, "limit": 5}
    assert [d["_id"] for d in db.v.aggregate([{"$vectorSearch": stage}])] == [1]  # BUILDING or READY
    db.v.insert_one({"_id": 2, "e": [1.0, 0.1]})
    assert [d["_id"] for d in db.v.aggregate([{"$vectorSearch": stage}])] == [1, 2]  # at once
    bad = {"fields": [{"type": "vector", "path": "e", "numDimensions": 0, "similarity": "cosine"}]}
    assert _code(lambda: db.v.create_search_index(SearchIndexModel(definition=bad, type="vectorSearch"))) == 2
    assert _code(lambda: list(db.v.aggregate([{"$vectorSearch": {**stage, "filter": {"x": 1}}}]))) == 8


def _row_full_text_search(db: Any) -> None:
    from pymongo.operations import SearchIndexModel

    db.t.insert_one({"_id": 1, "title": "the quick fox"})
    db.t.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": True}}))
    text = {"text": {"query": "fox", "path": "title"}}
    assert [d["_id"] for d in db.t.aggregate([{"$search": text}])] == [1]  # BUILDING or READY
    db.t.insert_one({"_id": 2, "title": "a fox"})
    assert {d["_id"] for d in db.t.aggregate([{"$search": text}])} == {1, 2}  # at once
    (meta,) = db.t.aggregate([{"$searchMeta": {**text, "count": {"type": "lowerBound"}}}])
    assert meta == {"count": {"lowerBound": 2}}  # exact
    assert _code(lambda: list(db.t.aggregate([{"$search": {"text": {"path": "title"}}}]))) == 8
    synonyms = {"text": {"query": "fox", "path": "title", "synonyms": "s"}}
    assert _code(lambda: list(db.t.aggregate([{"$search": synonyms}]))) == 8  # no such mapping
    assert _code(lambda: list(db.t.aggregate([{"$search": {"hasRoot": {"operator": text}}}]))) == 8  # no scope
    assert _code(lambda: list(db.t.aggregate([{"$search": {"vectorSearch": {}}}]))) == 238
    assert _code(lambda: list(db.t.aggregate([{"$search": {**text, "searchAfter": "x"}}]))) == 8  # bad token
    like = {"moreLikeThis": {"like": {"title": "fox"}}}
    assert {d["_id"] for d in db.t.aggregate([{"$search": like}])} == {1, 2}
    fused = {"$rankFusion": {"input": {"pipelines": {"t": [{"$search": text}]}}}}
    assert [d["_id"] for d in db.t.aggregate([fused])] in ([1, 2], [2, 1])
    assert (
        _code(lambda: list(db.t.aggregate([{"$rankFusion": {"input": {"pipelines": {"p": [{"$match": {}}]}}}}]))) == 9
    )


DIFFERENCE_ROWS = {
    "Collation": _row_collation,
    "Sessions and transactions": _row_sessions,
    "Change streams": _row_change_streams,
    "Geospatial": _row_geo,
    "`$text` inside `$or`": _row_text_in_or,
    "Text search languages": _row_text_languages,
    "`$percentile`, `$median`": _row_percentile,
    "Server-side JavaScript": _row_javascript,
    "Capped collections": _row_capped,
    "Time-series and clustered collections": _row_timeseries,
    "Replication, `w` > 1": _row_write_concern,
    "Session listing": _row_session_listing,
    "Covered queries": _row_covered,
    "Plan cache": _row_plan_cache,
    "Search indexes and `$vectorSearch`": _row_search_indexes,
    "Full-text search": _row_full_text_search,
}


@pytest.mark.parametrize("area", DIFFERENCE_ROWS)
def test_differences_row_holds(area: str, db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)
    table = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")
    assert f"\n| {area} |" in table, f"no row {area!r} in docs/differences.md"
    DIFFERENCE_ROWS[area](db)


# -- statements the code decides ----------------------------------------------------
# Each checks a sentence of the docs against its source of truth, so that a change of
# the code (or of the sentence) that makes it untrue fails here.

GUIDE = ROOT / "docs" / "guide.md"


def _flat(path: Path) -> str:
    """A document's text with its line breaks and indentation folded into single spaces."""
    return " ".join(path.read_text(encoding="utf-8").split())


def _sentence_from(text: str, start: str, end: str = ". ") -> str:
    """The text from ``start`` to the next ``end`` (the end of its sentence, by default)."""
    at = text.index(start)
    stop = text.find(end, at)
    return text[at : stop if stop >= 0 else len(text)]


def test_guide_lists_every_dependency() -> None:
    def name(requirement: str) -> str:
        return re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")

    declared = {name(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    listed = _sentence_from(_flat(GUIDE), "Its dependencies")
    named = {name(n) for n in re.findall(r"`([A-Za-z0-9_.-]+)`", listed)} - {"bson", "$regex", "2dsphere", "2d"}
    assert named == declared, f"the guide names {sorted(named)}, pyproject.toml declares {sorted(declared)}"


# How the guide's sentence on index kinds names compatibility.md's rows.
_INDEX_KIND_ROWS = {
    "single field": {"single field"},
    "compound": {"compound"},
    "multikey": {"multikey"},
    "unique": {"unique"},
    "sparse": {"sparse"},
    "partial": {"partial"},
    "TTL": {"TTL"},
    "hidden": {"hidden"},
    "case-insensitive (a collation)": {"case-insensitive (collation)"},
    "text": {"text"},
    "hashed (also compound with other keys)": {"hashed", "hashed, compound"},
    "wildcard": {"wildcard"},
    "2d": {"2d"},
    "2dsphere": {"2dsphere"},
    "compound text indexes": {"text, compound with other keys"},
    "compound wildcard indexes": {"wildcard, compound"},
}


def _compatibility_rows(section: str) -> dict[str, str]:
    text = (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)`(?: †)? \| ([^|]+) \|$", body, flags=re.MULTILINE))


def _kinds(clause: str) -> list[str]:
    return [k.strip() for k in re.split(r",(?![^(]*\))| and ", clause) if k.strip()]


def test_guide_index_kinds_are_the_compatibility_tables() -> None:
    # compatibility.md is generated by running each kind (scripts/gen_compat.py, checked above).
    rows = _compatibility_rows("Index kinds and properties")
    text = _flat(GUIDE)
    built = _kinds(_sentence_from(text, "The kinds are").removeprefix("The kinds are"))
    not_yet = _kinds(_sentence_from(text, "Not yet: compound").removeprefix("Not yet:").split(" (")[0])
    assert set().union(*(_INDEX_KIND_ROWS[k] for k in built)) == {r for r, s in rows.items() if s == "supported"}
    assert set().union(*(_INDEX_KIND_ROWS[k] for k in not_yet)) == {
        r for r, s in rows.items() if s.startswith("not yet")
    }


def test_commands_the_guide_says_work_are_built() -> None:
    import foliodb  # noqa: F401 - registers every command
    from foliodb.commands.registry import COMMANDS

    users = _sentence_from(_flat(GUIDE), "Users live in", "What it does not do yet")
    named = [n for n in re.findall(r"`(\w+)`", users) if n in COMMANDS or n in COMMANDS.unbuilt]
    assert "createRole" in named
    assert [n for n in named if n not in COMMANDS] == [], "the guide names commands that answer 238"


def test_persona_is_what_hello_answers(tmp_path: Path) -> None:
    import pymongo

    from foliodb.server import Server

    seen: dict[str, dict[str, Any]] = {}
    for persona, options in (("default", {}), ("standalone", {"replica_set": None})):
        server = Server(str(tmp_path / persona), "127.0.0.1", 0, **options)
        host, port = server.start()
        try:
            with pymongo.MongoClient(host, port, directConnection=True, serverSelectionTimeoutMS=5000) as client:
                seen[persona] = client.admin.command("hello")
        finally:
            server.shutdown()
    name = seen["default"]["setName"]
    assert seen["default"]["isWritablePrimary"] is True and "setName" not in seen["standalone"]
    for path in (ROOT / "README.md", GUIDE):
        said = re.findall(r"one-member replica set(?: of `mongod` 8\.0)?,? \(?`(\w+)`", _flat(path))
        assert said and set(said) == {name}, f"{path.name} names the replica set {said}, hello says {name!r}"
        assert "`--standalone`" in _flat(path)
    assert "as to a standalone" not in _flat(GUIDE)


def test_tool_figures_come_from_the_benchmark_run() -> None:
    # docs/benchmarks.md's tools table is the cited run rendered by benchmarks.tools.table, and
    # the guide's figures are that table's (its CPU-time shares).
    from benchmarks import tools

    bench = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    section = bench.split("## Tools: restore and import\n", 1)[1].split("\n## ", 1)[0]
    (cited,) = set(re.findall(r"`(benchmarks/results/[\w.-]+-tools\.json)`", section))
    run = json.loads((ROOT / cited).read_text(encoding="utf-8"))
    assert tools.table(run) in section, (
        f"docs/benchmarks.md's tools table is not {cited}: python -m benchmarks.tools --report {cited}"
    )
    said = re.search(
        r"`foliodb restore` runs at (\S+) of `insert_many`'s rate from a directory and (\S+) from an archive, "
        r"`foliodb import` of JSON at (\S+),",
        _flat(GUIDE),
    )
    assert said is not None, "the guide's performance bullet on restore and import"
    cpu = [tools.share(run, name, "cpu_seconds") for name in ("restore", "restore_archive", "import")]
    assert list(said.groups()) == cpu, "the guide's figures are not the cited run's CPU-time shares"
