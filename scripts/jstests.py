"""Run MongoDB's own jstests (r4.2, legacy-shell JavaScript) through mongosh against a fresh `foliodb serve`.

    python scripts/jstests.py TESTS_ROOT jstests/aggregation [more files or folders] --harness HARNESS_DIR

TESTS_ROOT is a folder extracted from MongoDB's source (`jstests/`, `src/mongo/shell/`, `error_codes.err`;
`python scripts/jstests.py --extract GIT_DIR TESTS_ROOT` makes one from a git mirror holding tag
r4.2.0-rc2). MongoDB's tests are SSPL-licensed: they are read from there, never copied into this project.
HARNESS_DIR is the legacy-shell emulation for mongosh (natives.js, build_prelude.py, fix_var_params.js,
entry.js); `--harness` defaults to $JSTESTS_HARNESS.

Each file runs in its own mongosh process with a per-file timeout, every non-system database dropped
first (entry.js); a file passes when the shell exits 0 having printed `JSTEST_RESULT PASS`. The server is
restarted on a fresh dbpath when it stops answering `ping` or after a file timed out (a wedged server
would otherwise fail every later file).

Every failure gets a class from scripts/jstests_classification.toml (a file's row), else from the
error text (the harness's `HARNESS-UNSUPPORTED: ShardingTest` means `topology`), else `unclassified`:

    foliodb      FolioDB differs from MongoDB 8 (a bug to fix)
    difference   a deliberate difference documented in docs/differences.md
    harness      the mongosh-based harness cannot run it (legacy-shell internals, shell-side features)
    obsolete     the test checks r4.2 behaviour that MongoDB 8 changed
    topology     needs ShardingTest, ReplSetTest or MongoRunner: servers the harness cannot start

The summary gives the pass rate over all files and over the files whose failures are not `harness`,
`obsolete` or `topology` (the files a MongoDB 8 server could pass under this harness).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pymongo
import pymongo.errors

CHECKOUT = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).with_name("jstests_classification.toml")
CLASSES = ("foliodb", "difference", "harness", "obsolete", "topology", "unclassified")
# Classes whose files a MongoDB 8 server could not pass under this harness either.
NOT_RUNNABLE = ("harness", "obsolete", "topology")
TOPOLOGY = re.compile(r"HARNESS-UNSUPPORTED: (ShardingTest|ReplSetTest|MongoRunner|runMongoProgram|_startMongoProgram)")
# What --extract takes from the mirror: the tests, the libraries they load and the legacy shell's sources.
EXTRACT_PATHS = (
    "jstests/aggregation",
    "jstests/core",
    "jstests/libs",
    "jstests/noPassthrough/libs",
    "jstests/concurrency/fsm_workload_helpers",
    "jstests/concurrency/fsm_libs",
    "jstests/hooks",
    "jstests/replsets/rslib.js",
    "src/mongo/shell",
)
TAG = "r4.2.0-rc2"


@dataclass
class Outcome:
    file: str
    status: str  # PASS, FAIL or TIMEOUT
    seconds: float
    error: str
    klass: str = ""
    cause: str = ""


# ---------------------------------------------------------------------------------------------- setup


def extract(git_dir: Path, dest: Path) -> None:
    """Extract TAG's tests and shell sources from a git mirror into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(git_dir), "archive", TAG, *EXTRACT_PATHS], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)
    codes = subprocess.run(
        ["git", "-C", str(git_dir), "show", f"{TAG}:src/mongo/base/error_codes.err"], check=True, capture_output=True
    ).stdout
    (dest / "error_codes.err").write_bytes(codes)


def find_mongosh(given: str | None) -> Path:
    candidates = [given, os.environ.get("MONGOSH"), str(CHECKOUT / "tests/clients/node/node_modules/.bin/mongosh")]
    candidates.append(shutil.which("mongosh"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    sys.exit("mongosh not found: give --mongosh, set MONGOSH, or `npm ci` in tests/clients/node")


def node_modules(mongosh: Path) -> Path:
    """The node_modules folder mongosh runs from (the harness loads its async-rewriter and babel)."""
    nm = mongosh.resolve().parents[2]
    if not (nm / "@mongosh/async-rewriter2").is_dir():
        nm = mongosh.parent.parent
    if not (nm / "@babel/core").is_dir():
        sys.exit(f"cannot find node_modules beside {mongosh}")
    return nm


def prepare(tests: Path, harness: Path, work: Path, nm: Path) -> Path:
    """Copy the tests into ``work`` with the harness's source fixes, build the prelude once, return it.

    Rebuilt when a harness file is newer than the last build."""
    prelude = work / "prelude.built.js"
    stamp = work / ".stamp"
    if stamp.exists() and all(p.stat().st_mtime <= stamp.stat().st_mtime for p in harness.iterdir()):
        return prelude
    print(f"[prepare] copying the tests into {work} and building the prelude ...", flush=True)
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    for name in ("jstests", "src"):
        shutil.copytree(tests / name, tree / name)
    shutil.copy(tests / "error_codes.err", tree / "error_codes.err")
    sources = sorted(
        str(p.relative_to(tests))
        for root in ("jstests", "src/mongo/shell")
        for p in (tests / root).rglob("*.js")
        if not p.name.endswith(".tpl.js")
    )
    subprocess.run(["node", str(harness / "fix_var_params.js"), str(nm), str(tests), str(tree), *sources], check=True)
    rewriter = nm / "@mongosh/async-rewriter2/bin/async-rewrite.js"
    subprocess.run(
        [sys.executable, str(harness / "build_prelude.py"), str(tree), str(harness), str(rewriter), str(prelude)],
        check=True,
    )
    stamp.touch()
    return prelude


def select(tests: Path, targets: list[str], sample: int | None, seed: int) -> list[str]:
    """The test files named by ``targets`` (files, or folders searched recursively), sorted."""
    files: list[str] = []
    for target in targets:
        path = tests / target
        if path.is_dir():
            for p in sorted(path.rglob("*.js")):
                rel = p.relative_to(tests)
                if not {"extras", "data", "libs"} & set(rel.parts[2:-1]):
                    files.append(str(rel))
        elif path.is_file():
            files.append(target)
        else:
            sys.exit(f"no such test file or folder: {path}")
    files = sorted(dict.fromkeys(files))
    if sample is not None and sample < len(files):
        files = sorted(random.Random(seed).sample(files, sample))
    return files


# --------------------------------------------------------------------------------------------- server


class Server:
    """`foliodb serve` in a child process on a fresh dbpath; ``restart`` replaces a wedged one."""

    def __init__(self, log: Path, extra: list[str]) -> None:
        self.log = log
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.dbpath: str | None = None
        self.uri = ""
        self.hostport = ""
        self.restarts = 0

    def start(self) -> None:
        self.dbpath = tempfile.mkdtemp(prefix="foliodb-jstests-")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]))
        command = [sys.executable, "-m", "foliodb", "serve", "--dbpath", self.dbpath, "--port", "0"]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [*command, "--enableTestCommands", *self.extra],
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        match = re.search(r"waiting for connections on (\S+):(\d+)", line)
        if match is None:
            raise SystemExit(f"foliodb serve did not start: {line!r} (see {self.log})")
        self.hostport = f"{match[1]}:{match[2]}"
        self.uri = f"mongodb://{self.hostport}/"

    def answers(self) -> bool:
        client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(
            self.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=10000, connectTimeoutMS=5000
        )
        try:
            client.admin.command("ping")
            # A wedged lane answers ping but not a write: probe both.
            client["jstests_probe"].command("drop", "probe")
            return True
        except pymongo.errors.PyMongoError:
            return False
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        if self.dbpath is not None:
            shutil.rmtree(self.dbpath, ignore_errors=True)
            self.dbpath = None

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()


# ----------------------------------------------------------------------------------------------- runs


def run_file(file: str, server: Server, prelude: Path, work: Path, harness: Path, mongosh: Path, nm: Path,
             timeout: float, logs: Path) -> Outcome:  # fmt: skip
    log = logs / (file.removeprefix("jstests/").replace("/", "__") + ".log")
    env = dict(
        os.environ,
        HOME=str(work / "home"),
        DO_NOT_TRACK="1",
        CI="1",
        MONGOSH_TELEMETRY_ENDPOINT="",
        JSTEST_FILE=file,
        JSTEST_PRELUDE=str(prelude),
        JSTEST_HOST=server.hostport,
        JSTEST_MONGOSH=str(mongosh),
        JSTEST_URI=server.uri,
        JSTEST_ENTRY=str(harness / "entry.js"),
        JSTEST_NM=str(nm),
    )
    started = time.monotonic()
    with log.open("wb") as out:
        # Its own process group, so the parallel shells a test leaves behind go with it.
        proc = subprocess.Popen(
            [str(mongosh), "--quiet", "--norc", server.uri, str(harness / "entry.js")],
            cwd=work / "tree",
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    seconds = time.monotonic() - started
    text = log.read_text(errors="replace")
    if rc == 0 and "\nJSTEST_RESULT PASS" in "\n" + text:
        return Outcome(file, "PASS", seconds, "")
    error = next((line[len("JSTEST_ERROR ") :] for line in text.splitlines() if line.startswith("JSTEST_ERROR ")), "")
    if not error:
        lines = [line for line in text.splitlines() if line.strip()]
        error = lines[-1] if lines else ""
    return Outcome(file, "TIMEOUT" if rc is None else "FAIL", seconds, error[:400].replace("\t", " "))


def load_table() -> dict[str, dict[str, str]]:
    with TABLE.open("rb") as f:
        data = tomllib.load(f)
    table: dict[str, dict[str, str]] = data.get("files", {})
    for file, row in table.items():
        if row.get("class") not in CLASSES:
            raise SystemExit(f"{TABLE.name}: {file}: class must be one of {CLASSES}")
        if not row.get("cause"):
            raise SystemExit(f"{TABLE.name}: {file}: a cause is required")
    return table


def classify(outcome: Outcome, table: dict[str, dict[str, str]]) -> None:
    if outcome.status == "PASS":
        return
    row = table.get(outcome.file)
    if row is not None:
        outcome.klass, outcome.cause = row["class"], row["cause"]
    elif TOPOLOGY.search(outcome.error):
        outcome.klass, outcome.cause = "topology", TOPOLOGY.search(outcome.error)[1]  # type: ignore[index]
    else:
        outcome.klass, outcome.cause = "unclassified", outcome.error[:160]


def summarize(outcomes: list[Outcome], table: dict[str, dict[str, str]], restarts: int) -> str:
    total = len(outcomes)
    passed = sum(o.status == "PASS" for o in outcomes)
    by_class = {k: [o for o in outcomes if o.klass == k] for k in CLASSES}
    excluded = sum(len(by_class[k]) for k in NOT_RUNNABLE)
    runnable = total - excluded
    lines = ["", "failures by class:"]
    for klass in CLASSES:
        if by_class[klass]:
            lines.append(f"  {klass}: {len(by_class[klass])}")
            for o in by_class[klass]:
                lines.append(f"    {o.file} [{o.status}] {o.cause}")
    stale = [o.file for o in outcomes if o.status == "PASS" and o.file in table]
    if stale:
        lines.append("classified as failing but passed (remove their rows): " + ", ".join(stale))
    lines.append("")
    lines.append(f"total={total} passed={passed} failed={total - passed} server_restarts={restarts}")
    lines.append(f"pass rate: {100 * passed / max(total, 1):.1f}% of all files")
    lines.append(
        f"pass rate: {100 * passed / max(runnable, 1):.1f}% of the {runnable} files whose failures are not "
        f"{', '.join(NOT_RUNNABLE)} ({passed}/{runnable})"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n", 3)[3],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("tests", type=Path, help="the extracted MongoDB source folder (jstests/, src/mongo/shell/)")
    parser.add_argument("targets", nargs="*", help="test files or folders under TESTS (jstests/aggregation)")
    parser.add_argument("--extract", type=Path, metavar="GIT_DIR", help=f"first extract {TAG} from this git mirror")
    parser.add_argument("--harness", type=Path, default=os.environ.get("JSTESTS_HARNESS"))
    parser.add_argument("--list", type=Path, help="a file naming the tests, one a line")
    parser.add_argument("--sample", type=int, help="run a random sample of this many of the selected files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=float(os.environ.get("JSTEST_TIMEOUT", 60)))
    parser.add_argument("--mongosh")
    parser.add_argument("--work", type=Path, help="where the prepared tests and results go (default: a temp folder)")
    parser.add_argument("--out", type=Path, help="results folder (default: WORK/results/<time>)")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra `foliodb serve` argument")
    args = parser.parse_args()

    tests: Path = args.tests.resolve()
    if args.extract:
        extract(args.extract, tests)
    if args.harness is None:
        sys.exit("give --harness or set JSTESTS_HARNESS (the legacy-shell emulation for mongosh)")
    harness = args.harness.resolve()
    targets = list(args.targets)
    if args.list:
        targets += [line.strip() for line in args.list.read_text().splitlines() if line.strip()]
    if not targets:
        sys.exit("name test files or folders (e.g. jstests/aggregation), or --list")
    table = load_table()
    mongosh = find_mongosh(args.mongosh)
    nm = node_modules(mongosh)
    digest = hashlib.sha256(str(tests).encode()).hexdigest()[:12]
    work = (args.work or Path(tempfile.gettempdir()) / f"foliodb-jstests-{digest}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "home/.mongodb/mongosh").mkdir(parents=True, exist_ok=True)
    (work / "home/.mongodb/mongosh/config").write_text('{"enableTelemetry":false,"disableLogging":true,"updateURL":""}')
    prelude = prepare(tests, harness, work, nm)
    files = select(tests, targets, args.sample, args.seed)
    out: Path = args.out or work / "results" / time.strftime("%Y%m%d-%H%M%S")
    (out / "logs").mkdir(parents=True, exist_ok=True)

    server = Server(out / "server.log", args.serve_arg)
    server.start()
    outcomes: list[Outcome] = []
    print(f"[run] {len(files)} files against foliodb serve at {server.uri} (timeout {args.timeout:.0f}s) -> {out}")
    try:
        for n, file in enumerate(files, 1):
            if not server.answers():
                print(f"[run] the server stopped answering before {file}: restarting", flush=True)
                server.restart()
            outcome = run_file(file, server, prelude, work, harness, mongosh, nm, args.timeout, out / "logs")
            classify(outcome, table)
            outcomes.append(outcome)
            tag = f" ({outcome.klass})" if outcome.klass else ""
            print(f"[{n:4d}/{len(files)}] {outcome.status:<7} {outcome.seconds:6.1f}s {file}{tag}", flush=True)
            if outcome.status == "TIMEOUT":
                server.restart()  # a timed-out file may have left work running that stalls the next ones
    finally:
        server.stop()
    with (out / "results.tsv").open("w") as f:
        f.write("file\tstatus\tseconds\tclass\terror\n")
        for o in outcomes:
            f.write(f"{o.file}\t{o.status}\t{o.seconds:.1f}\t{o.klass}\t{o.error}\n")
    summary = summarize(outcomes, table, server.restarts)
    (out / "summary.txt").write_text(summary + "\n")
    print(summary)


if __name__ == "__main__":
    main()
