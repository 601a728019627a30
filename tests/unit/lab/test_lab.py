"""The lab: every scenario at a small size, each design answering the same
questions alike, and the measurements and reports it makes of them."""

from __future__ import annotations

import dataclasses
import datetime
import random
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import foliodb
from foliodb import lab
from foliodb.lab.html import render_html
from foliodb.lab.measure import run_scenario, schedule
from foliodb.lab.report import claim_ratios, render_text
from foliodb.lab.scenarios import iot

SIZE = 40


@pytest.fixture(scope="module")
def results() -> list[lab.ScenarioResult]:
    return lab.run(size=SIZE, calls=2)


def test_every_design_answers_every_question_alike(results: list[lab.ScenarioResult]) -> None:
    assert [r.scenario.name for r in results] == list(lab.SCENARIOS)
    for result in results:
        expected_differences = {q.name for q in result.scenario.questions if not q.same_answer}
        assert set(result.mismatches) <= expected_differences, (result.scenario.name, result.mismatches)
        for design in result.designs:
            if not design.available:
                continue
            assert {m.question for m in design.measurements} == {q.name for q in result.scenario.questions}
            assert design.data_bytes > 0
            for m in design.measurements:
                assert m.calls > 0 and 0 < m.median_us <= m.p95_us
        for question in result.scenario.questions:
            if question.kind == "write":  # some call may change nothing (a move to the same parent), not all
                written = [m.docs_written for d in result.designs if (m := d.measurement(question.name))]
                assert all(n > 0 for n in written), (result.scenario.name, question.name, written)


def test_the_counts_show_what_each_design_does(results: list[lab.ScenarioResult]) -> None:
    by_name = {r.scenario.name: {d.design: d for d in r.designs} for r in results}
    blog = by_name["blog"]
    page = {name: blog[name].measurement("show a post page") for name in "ABCD"}
    # B reads one document; A joins post, author, comments, count and names (5 operations).
    assert page["B"] is not None and page["B"].operations == 1 and page["B"].docs_examined == 1
    assert page["A"] is not None and page["A"].operations == 5
    timelines = by_name["timelines"]
    on_read, on_write = (timelines[n].measurement("publish a post") for n in ("on read", "on write"))
    assert on_read is not None and on_write is not None
    assert on_read.docs_written == 1 and on_write.docs_written > 2  # one per follower as well
    iot_designs = by_name["iot"]
    assert iot_designs["hourly"].data_bytes < iot_designs["reading"].data_bytes


def test_hourly_averages_match_the_readings() -> None:
    """The IoT answer checked against the generated readings in plain Python:
    the averaged week ends before the data does, so the workload's new readings
    never fall inside it."""
    data = iot.generate(SIZE, random.Random(3))
    device, since = iot._week(data, random.Random(4))
    until = since + datetime.timedelta(hours=iot.WEEK_HOURS)
    hours: dict[datetime.datetime, list[int]] = {}
    for r in data["readings"]:
        if r["device"] == device and since <= r["time"] < until:
            hours.setdefault(r["time"].replace(minute=0), []).append(r["value"])
    expected = [(h, round(sum(v) / len(v), 9), len(v)) for h, v in sorted(hours.items())]
    with foliodb.MongoClient(":memory:") as client:
        for design in iot.SCENARIO.designs:
            db = client[f"check_{design.name}"]
            if design.available(db):
                design.load(db, data)
                assert design.answers["hourly averages over a week"](db, (device, since)) == expected


def test_references_show_todays_price_after_a_price_change() -> None:
    """What the orders scenario is for: once prices change, an order read
    through references no longer shows what was paid; the snapshot does."""
    with foliodb.MongoClient(":memory:") as client:
        result = run_scenario(client, lab.SCENARIOS["orders"], 30, calls=10)
    assert result.mismatches == {"show an order": ["reference"]}
    snapshot, reference = (d.answers["show an order"] for d in result.designs)
    assert any(a["total"] != b["total"] for a, b in zip(snapshot, reference, strict=True))
    assert "answers differ (expected) from snapshot in reference" in render_text([result])


def test_a_design_the_database_lacks_is_reported_not_run() -> None:
    """A design whose ``available`` says no (a time-series collection on a database
    without them) is listed, not measured, and never counted as a differing answer."""
    iot_scenario = lab.SCENARIOS["iot"]
    reading, hourly, _ = iot_scenario.designs
    lacking = dataclasses.replace(hourly, name="lacking", available=lambda db: False)
    scenario = dataclasses.replace(iot_scenario, designs=(reading, lacking))
    with foliodb.MongoClient(":memory:") as client:
        result = run_scenario(client, scenario, 10, calls=1)
        assert not [n for n in client.list_database_names() if n.startswith("lab_")]  # scratch dropped
    absent = result.designs[1]
    assert (absent.design, absent.available, absent.measurements, absent.data_bytes) == ("lacking", False, [], 0)
    assert result.mismatches == {}
    assert "(not available on this database)" in render_text([result])


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.external += [v for k, v in attrs if k in ("src", "href") and v]


def test_reports(results: list[lab.ScenarioResult]) -> None:
    text = render_text(results)
    for result in results:
        assert result.scenario.title in text
        for question in result.scenario.questions:
            assert question.name in text
    assert "ANSWERS DIFFER" not in text
    claims = claim_ratios(results)
    assert {(c[0], c[1]) for c in claims} == {
        ("blog", "show a post page"),
        ("iot", "hourly averages over a week"),
        ("iot", "last hour of a device"),
        ("timelines", "read a timeline"),
    }
    page = _Page()
    page.feed(render_html(results))
    questions = sum(len(r.scenario.questions) for r in results)
    assert page.tags["svg"] == questions and page.tags["section"] == len(results)
    assert page.external == [] and page.tags.get("script", 0) == 0  # self-contained


def test_command_line(tmp_path: Path) -> None:
    out = tmp_path / "lab.html"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "foliodb",
            "lab",
            "blog",
            "orders",
            "--size",
            "20",
            "--calls",
            "1",
            "--html",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "show a post page" in run.stdout and "the texts' claims, measured" in run.stdout and run.stderr == ""
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    bad = subprocess.run([sys.executable, "-m", "foliodb", "lab", "nosuch"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown scenario nosuch" in bad.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless chromium on PATH (.ci/run installs Debian's)")
def test_html_report_renders_in_headless_chromium(results: list[lab.ScenarioResult], tmp_path: Path) -> None:
    page = tmp_path / "lab.html"
    page.write_text(render_html(results), encoding="utf-8")
    assert CHROMIUM is not None
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout.decode()
    assert dom.count('class="bar"') == sum(
        len([d for d in r.designs if d.available]) * len(r.scenario.questions) for r in results
    )


def test_the_workload_clock_runs_forward() -> None:
    """Arguments are drawn in the order the calls run: a new post published
    later has a later time (a wall is in push order, a timeline query in time
    order: a schedule that published post 14 before post 10 made them differ)."""
    scenario = lab.SCENARIOS["timelines"]
    data = scenario.generate(30, random.Random(1))
    work = schedule(scenario, data, 10, 2)
    published = [argument["created_at"] for question, argument in work if question.name == "publish a post"]
    assert published == sorted(published) and len(published) == 20
