"""Run an ODM's own test suite against FolioDB, over the wire and embedded, and compare.

    python scripts/odm_suites.py beanie --checkout ~/src/beanie
    python scripts/odm_suites.py odmantic --checkout ~/src/odmantic -k "not benchmarks"

``--checkout`` is a clone of the suite's repository at the installed version
(without it, one is cloned from GitHub at the tag of the installed version).
Its test requirements must be installed: ``pip install -e '.[odm-suites]'``.

Two runs of the same tests:

* **wire**: a ``foliodb serve`` on a free port over a fresh dbpath; the suite
  gets its URI the way it reads one (beanie: ``MONGODB_DSN``; odmantic:
  ``TEST_MONGO_URI``);
* **embedded**: the same suite with ``-p embedded_suites`` (tests/odm/embedded_suites.py), which
  makes the clients it creates FolioDB's in-process clients
  (``foliodb.AsyncMongoClient``; for motor's, ``foliodb.client.asynchronous.motor``).

Both runs tell odmantic's suite ``TEST_MONGO_MODE=replicaSet``: the server and
the embedded engine are a replica set's primary, so its transaction tests run.
Each run writes a JUnit XML file; the summary counts each run's outcomes and
the share of the tests that pass over the wire that pass embedded too, and
lists those that do not.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Suite:
    package: str  # the installed distribution
    repository: str
    tag: str  # the tag of a version: "{version}" filled in
    tests: tuple[str, ...]  # test paths in the checkout
    wire_env: tuple[tuple[str, str], ...]  # environment variables over the wire: "{uri}" filled in
    env: tuple[tuple[str, str], ...] = ()  # environment variables of both runs


SUITES = {
    "beanie": Suite(
        "beanie",
        "https://github.com/BeanieODM/beanie",
        "{version}",
        ("tests",),
        (("MONGODB_DSN", "{uri}beanie_db"),),
    ),
    "odmantic": Suite(
        "odmantic",
        "https://github.com/art049/odmantic",
        "v{version}",
        ("tests",),
        (("TEST_MONGO_URI", "{uri}"),),
        # Both the server and the embedded engine are a replica set's primary: its transaction tests run.
        (("TEST_MONGO_MODE", "replicaSet"),),
    ),
}


def checkout(suite: Suite, given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    version = importlib.metadata.version(suite.package)
    target = Path(tempfile.gettempdir()) / f"foliodb-suite-{suite.package}-{version}"
    if not target.exists():
        tag = suite.tag.format(version=version)
        subprocess.run(["git", "clone", "--depth", "1", "--branch", tag, suite.repository, str(target)], check=True)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pytest_command(source: Path, suite: Suite, junit: Path, extra: list[str]) -> list[str]:
    # The suite's own pytest configuration (asyncio mode, warning filters) applies: its rootdir is the checkout.
    # No coverage (beanie's addopts ask for it) and no cache written into the checkout.
    return [
        sys.executable,
        "-m",
        "pytest",
        *suite.tests,
        "--rootdir",
        str(source),
        "-o",
        "addopts=",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--junitxml={junit}",
        *extra,
    ]


def environment(source: Path, suite: Suite) -> dict[str, str]:
    env = dict(os.environ)
    env.update(suite.env)
    # The suite's own ``tests`` package comes first; FolioDB's plugin is imported by its module name.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(source), str(ROOT), str(ROOT / "tests" / "odm"), env.get("PYTHONPATH", "")]
    )
    return env


def run_wire(source: Path, suite: Suite, junit: Path, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="foliodb-suite-wire-") as dbpath:
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "foliodb", "serve", "--dbpath", dbpath, "--port", str(port)],
            env=environment(source, suite),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("foliodb serve did not start") from None
                    time.sleep(0.1)
            env = environment(source, suite)
            uri = f"mongodb://127.0.0.1:{port}/"
            env.update((name, value.format(uri=uri)) for name, value in suite.wire_env)
            subprocess.run(pytest_command(source, suite, junit, extra), cwd=source, env=env)
        finally:
            server.terminate()
            server.wait()


def run_embedded(source: Path, suite: Suite, junit: Path, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="foliodb-suite-embedded-") as dbpath:
        env = environment(source, suite)
        env["FOLIODB_SUITE_DBPATH"] = dbpath
        command = pytest_command(source, suite, junit, ["-p", "embedded_suites", *extra])
        subprocess.run(command, cwd=source, env=env)


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> passed, failed, error or skipped, from a JUnit XML file."""
    results = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        results[name] = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
            kinds[0] if kinds else "", "passed"
        )
    return results


def summary(name: str, wire: dict[str, str], embedded: dict[str, str]) -> str:
    def counts(results: dict[str, str]) -> str:
        tally = {
            kind: sum(1 for outcome in results.values() if outcome == kind) for kind in sorted(set(results.values()))
        }
        return ", ".join(f"{n} {kind}" for kind, n in tally.items())

    passing = [test for test, outcome in wire.items() if outcome == "passed"]
    kept = [test for test in passing if embedded.get(test) == "passed"]
    share = 100.0 * len(kept) / len(passing) if passing else 0.0
    lines = [
        f"{name}: wire: {counts(wire)}",
        f"{name}: embedded: {counts(embedded)}",
        f"{name}: {len(kept)}/{len(passing)} ({share:.1f}%) of the tests that pass over the wire pass embedded",
    ]
    lines += [f"  not embedded: {test} ({embedded.get(test, 'not run')})" for test in passing if test not in kept]
    gained = [test for test, outcome in embedded.items() if outcome == "passed" and wire.get(test) != "passed"]
    lines += [f"  embedded only: {test} (wire: {wire.get(test, 'not run')})" for test in gained]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--checkout", help="a clone of the suite's repository (default: cloned at the installed tag)")
    parser.add_argument("--target", choices=("wire", "embedded", "both"), default="both")
    parser.add_argument("--out", default=".", help="where the JUnit XML files go")
    args, pytest_args = parser.parse_known_args()  # the rest (after --) goes to pytest
    suite = SUITES[args.suite]
    source = checkout(suite, args.checkout)
    extra = [arg for arg in pytest_args if arg != "--"]
    out = Path(args.out)
    junits = {target: out / f"{args.suite}-{target}.xml" for target in ("wire", "embedded")}
    if args.target in ("wire", "both"):
        run_wire(source, suite, junits["wire"], extra)
    if args.target in ("embedded", "both"):
        run_embedded(source, suite, junits["embedded"], extra)
    present = {target: outcomes(path) for target, path in junits.items() if path.exists()}
    print(summary(args.suite, present.get("wire", {}), present.get("embedded", {})))


if __name__ == "__main__":
    main()
