"""The schema-design advisor on the texts' example systems (systems.py):
every anti-pattern flagged with the right codes, every good design left
alone, with precision and recall reported; the evidence says what the data
holds; the JSON keeps its schema; the command line keeps its form; the HTML
report renders in headless Chromium.

Systems and rules: the schema-design texts' EXAMPLES.md and docs/advisor.md.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import foliodb
from foliodb.advisor import REPORT_SCHEMA, Report, advise, sampling
from foliodb.advisor.codes import PROBLEMS, RECOMMENDATIONS
from foliodb.advisor.html import render_html
from foliodb.advisor.report import CollectionSummary, RelationSummary
from foliodb.cli import main
from foliodb.server import Server

from . import systems
from .conftest import FIRST, score

ROOT = Path(__file__).resolve().parents[3]
DESIGNS = FIRST


@pytest.fixture(scope="module")
def built(first_set: Any) -> tuple[Any, dict[tuple[str, bool], Report]]:
    client, designs = first_set
    return client, {key: b.report for key, b in designs.items()}


def expected(name: str, good: bool) -> set[systems.Key]:
    return set() if good else systems.EXPECTED[name]


@pytest.mark.parametrize(("name", "good"), DESIGNS, ids=[f"{n}-{'good' if g else 'bad'}" for n, g in DESIGNS])
def test_findings_match_the_design(built: Any, name: str, good: bool) -> None:
    report = built[1][(name, good)]
    assert {f.key for f in report.findings} == expected(name, good), [f.summary for f in report.findings]


def test_precision_and_recall(built: Any, request: pytest.FixtureRequest) -> None:
    wanted = {(name, good, key) for name, good in DESIGNS for key in expected(name, good)}
    found = {(name, good, f.key) for (name, good), report in built[1].items() for f in report.findings}
    hits = len(wanted & found)
    precision, recall = hits / max(len(found), 1), hits / max(len(wanted), 1)
    line = (
        f"advisor, first set: precision {precision:.1%} ({hits}/{len(found)} findings right), recall {recall:.1%} "
        f"({hits}/{len(wanted)} anti-patterns found) over {len(DESIGNS)} designs of {len(systems.SYSTEMS)} systems"
    )
    score(request.config, line)
    assert precision >= 0.95 and recall >= 0.95, line


def finding(built: Any, name: str, problem: str) -> Any:
    return next(f for f in built[1][(name, False)].findings if f.problem == problem)


def test_evidence_is_this_databases_numbers(built: Any) -> None:
    # 15,000 of 20,000 users follow the celebrity (itself among them, so 14,999 at least).
    celebrity = finding(built, "social", "huge-reference-array")
    assert celebrity.evidence["longest"] >= 14_999 and celebrity.evidence["median_length"] <= 2
    # Each product has 120 to 250 parts, each read by its own find.
    parts = finding(built, "parts", "join-on-read").evidence
    assert 120 <= parts["longest_chain"] <= 250 and parts["ids_per_lookup"] == 1.0
    # Every fourth order holds its user_id as a string: 500 of 2,000, counted exactly.
    mixed = next(f for f in built[1][("mixed_types", False)].findings if f.path == "user_id")
    assert mixed.evidence["types"] == {"objectId": 1500, "string": 500} and mixed.evidence["references"] == "users"
    assert mixed.severity == "high" and "$toObjectId" in mixed.change.commands[0]
    assert mixed.proof is not None and mixed.proof.status == "proven" and mixed.proof.commands_run == 1
    # Drift was 1 to 5 comments on about 30% of the posts.
    counter = finding(built, "counters", "drifting-counter").evidence
    assert (
        1 <= counter["drift_min"] <= counter["drift_max"] <= 5 and 0.15 < counter["wrong"] / counter["compared"] < 0.45
    )
    # 2% pending and 2% processing orders: the partial index covers 4% of them.
    status = finding(built, "order_status", "collection-scan")
    assert 0.02 < status.evidence["partial_share"] < 0.07
    assert status.change.commands == [
        'db.orders.createIndex({ created_at: 1 }, { partialFilterExpression: { status: { $in: ["pending", "processing"] } } })'
    ]
    # 1,800 carts last changed uniformly over 180 days: five sixths of them are over 30 days old.
    carts = finding(built, "carts", "missing-ttl").evidence
    assert 0.68 < carts["share"] < 0.82
    readings = finding(built, "iot", "one-document-per-event").evidence
    assert (readings["source_field"], readings["sources"]) == ("sensor_id", 10)
    assert 55 < readings["readings_per_source_hour"] < 65  # one a minute, give or take 3 seconds
    sort = finding(built, "host_logs", "in-memory-sort")
    assert sort.change.commands == ["db.logmsg.createIndex({ host: 1, time: -1 })"]
    big = finding(built, "large_documents", "large-document")
    assert big.severity == "critical" and big.evidence["heaviest_fields"].keys() >= {"pdf"}


def test_an_outlier_the_sample_misses_is_found_by_its_references(built: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the 20,000 users are too many to pass over: the celebrity, in no sample of 1,000 with
    # 95% odds, is still checked because every sampled user's `following` names it.
    monkeypatch.setattr(sampling, "EXACT_SCAN_DOCS", 1000)
    for _ in range(3):  # the sample differs each time; the finding must not
        report = advise(built[0]["social_bad"], sample=200)
        found = [f for f in report.findings if f.problem == "huge-reference-array"]
        assert len(found) == 1 and found[0].evidence["found_by"] == "candidate check"


def test_json_keeps_its_schema_and_the_docs_show_it(built: Any) -> None:
    jsonschema.validate([r.as_json() for r in built[1].values()], REPORT_SCHEMA)
    docs = (ROOT / "docs" / "advisor.md").read_text(encoding="utf-8")
    block = re.search(r"## The JSON Schema.*?```json\n(.*?)```", docs, re.DOTALL)
    assert block is not None and json.loads(block.group(1)) == REPORT_SCHEMA
    for code in (*PROBLEMS, *RECOMMENDATIONS):
        assert f"`{code}`" in docs, code


def test_over_the_wire(tmp_path: Path) -> None:
    # The advisor needs only pymongo's API: through `foliodb serve` it says the same.
    server = Server(str(tmp_path / "served"), "127.0.0.1", 0)
    host, port = server.start()
    try:
        import pymongo

        with pymongo.MongoClient(f"mongodb://{host}:{port}/") as client:
            for name in ("blog_post_list", "parts"):
                report = advise(systems.build(client, name, False))
                assert {f.key for f in report.findings} == systems.EXPECTED[name]
    finally:
        server.shutdown()


# -- the command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def dbpath(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("advise") / "data"
    with foliodb.MongoClient(str(path)) as client:
        systems.build(client, "carts", False)
        systems.build(client, "indexes", False)
    return path


def test_cli_reports_and_exit_status(dbpath: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, page = tmp_path / "advice.json", tmp_path / "advice.html"
    assert main(["advise", str(dbpath), "--json", str(out), "--html", str(page), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "carts_bad: 1 collection, 300 profiled operations: 1 finding" in text
    assert "[MEDIUM] carts.last_modified: missing-ttl -> ttl-index" in text
    assert "db.carts.createIndex({ last_modified: 1 }, { expireAfterSeconds: 2592000 })" in text
    reports = json.loads(out.read_text())
    jsonschema.validate(reports, REPORT_SCHEMA)
    assert [r["database"] for r in reports] == ["carts_bad", "indexes_bad"]
    assert page.read_text().startswith("<!DOCTYPE html>")
    # --db twice, JSON on stdout, only medium and worse (the index findings are low).
    assert (
        main(
            [
                "advise",
                "--dbpath",
                str(dbpath),
                "--db",
                "indexes_bad",
                "--db",
                "carts_bad",
                "--json",
                "-",
                "--min-severity",
                "medium",
                "--quiet",
            ]
        )
        == 0
    )
    reports = json.loads(capsys.readouterr().out)
    assert [(r["database"], [f["problem"] for f in r["findings"]]) for r in reports] == [
        ("indexes_bad", []),
        ("carts_bad", ["missing-ttl"]),
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--min-severity", "huge"], "argument --min-severity: invalid choice: 'huge'"),
        (["--sample", "0"], "argument --sample: must be at least 1"),
        (["data", "--uri", "mongodb://x/"], "give the database once: DBPATH, mongodb://URI, --dbpath or --uri"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_cli_usage_errors_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"foliodb advise: {message}") and err.count("\n") == 1
    assert not (tmp_path / "data").exists()


def test_cli_missing_dbpath_is_not_created(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "foliodb", "advise", "missing"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stderr.decode()) == (
        1,
        "foliodb advise: no database at missing: the directory does not exist\n",
    )
    assert not (tmp_path / "missing").exists()


# -- the HTML report in a browser ----------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _pixels(png: bytes) -> set[bytes]:
    """The distinct RGB(A) pixels of an 8-bit PNG (enough of a decoder to tell a blank page)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width, channels = 8, b"", 0, 4
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, channels = int.from_bytes(body[:4], "big"), {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    raw, stride = zlib.decompress(data), width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for start in range(0, len(raw), stride + 1):
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                best = min((abs(p - left), 0, left), (abs(p - up), 1, up), (abs(p - corner), 2, corner))[2]
                line[i] = (line[i] + best) & 255
        rows.append(line)
        previous = line
    return {bytes(row[i : i + channels]) for row in rows[::7] for i in range(0, stride, channels * 7)}


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless chromium on PATH (.ci/run installs Debian's)")
def test_html_report_renders_in_headless_chromium(built: Any, tmp_path: Path) -> None:
    reports = [built[1][("social", False)], built[1][("blog_comments", False)], built[1][("healthy", False)]]
    page = tmp_path / "advice.html"
    page.write_text(render_html(reports), encoding="utf-8")
    assert "http://" not in page.read_text() and "https://" not in page.read_text()  # self-contained
    assert CHROMIUM is not None
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, *HEADLESS, f"--screenshot={shot}", "--window-size=1200,1400", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert len(_pixels(shot.read_bytes())) > 20  # text, charts and colours, not one blank colour
    dom = subprocess.run(
        [CHROMIUM, *HEADLESS, "--dump-dom", page.as_uri()], capture_output=True, timeout=120, check=True
    ).stdout.decode()
    assert dom.count('<svg class="relations"') == 3
    assert dom.count('class="histogram sizes"') == sum(len(r.collections) for r in reports)
    assert dom.count('class="histogram lengths"') >= 4  # followers, following, comments, addresses
    assert dom.count('<g class="edge">') == sum(len(r.relations) for r in reports) and 'class="bar"' in dom
    assert "huge-reference-array" in dom and "Nothing to change" not in dom.split("healthy")[0]


# The page is made for people, not scripts (it has none); the test adds one to measure the layout as
# Chromium draws it: the page's width when the body is 420 px wide, and every edge label's box against
# every other label and node of the relations graph.
_MEASURE = """<style>body { width: 420px; }</style><script>
window.addEventListener('load', () => {
  const out = {width: document.body.scrollWidth, overlaps: [], labels: 0};
  const meet = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  document.querySelectorAll('svg.relations').forEach(svg => {
    const edges = [...svg.querySelectorAll('g.edge text')];
    const nodes = [...svg.querySelectorAll('g.node text'), ...svg.querySelectorAll('g.node ellipse')];
    out.labels += edges.length;
    edges.forEach((t, i) => {
      const a = t.getBBox();
      edges.slice(i + 1).forEach(u => { if (meet(a, u.getBBox())) out.overlaps.push(t.textContent + ' / ' + u.textContent); });
      nodes.forEach(u => { if (meet(a, u.getBBox())) out.overlaps.push(t.textContent + ' / ' + (u.textContent || 'a node')); });
    });
  });
  document.body.setAttribute('data-measured', JSON.stringify(out));
});
</script>"""


def _crowded() -> Report:
    """Nine collections with long names and fourteen references among them: both ways between two,
    several between one pair, arrays, and two collections referencing themselves twice."""
    names = [
        f"{stem}_{n}"
        for n, stem in enumerate(
            [
                "customer_accounts",
                "orders",
                "line_items",
                "products",
                "product_categories",
                "reviews",
                "warehouses",
                "shipments",
                "audit_log",
            ]
        )
    ]
    edges = [
        (0, 1),
        (1, 0),
        (1, 2),
        (1, 2),
        (1, 2),
        (2, 3),
        (3, 4),
        (4, 4),
        (4, 4),
        (5, 3),
        (5, 0),
        (6, 6),
        (7, 1),
        (8, 0),
    ]
    return Report(
        "crowded",
        [],
        [CollectionSummary(n, 10**i, 300, 900, 100, [], [], 2) for i, n in enumerate(names)],
        [
            RelationSummary(names[a], f"{names[b].split('_')[0]}_ref_{k}", names[b], k % 2 == 0)
            for k, (a, b) in enumerate(edges)
        ],
        0,
        None,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless chromium on PATH (.ci/run installs Debian's)")
def test_html_report_reads_at_420_px_without_overlapping_labels(built: Any, tmp_path: Path) -> None:
    reports = [_crowded(), built[1][("social", False)], built[1][("healthy", False)]]
    page = tmp_path / "advice.html"
    page.write_text(render_html(reports).replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    assert CHROMIUM is not None
    dom = subprocess.run(
        [CHROMIUM, *HEADLESS, "--window-size=420,3000", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout.decode()
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found is not None
    measured = json.loads(found.group(1).replace("&quot;", '"'))
    assert measured["width"] <= 420, measured  # nothing wider than the page: wide parts scroll in their own box
    assert measured["labels"] == sum(len(r.relations) for r in reports)
    assert measured["overlaps"] == []
    # The workload section is always there, a table of shapes or the note that nothing was profiled.
    assert dom.count('class="workload"') == len(reports)
