"""The wire fuzzer (scripts/wire_fuzz.py), bounded: 20,000 mutated frames from
a captured pymongo corpus, with a fixed seed. No thread may die, nothing may
log a traceback, every connection answers or closes in time, ``ping`` works
throughout, and the guard data is intact and valid afterwards. The script
runs a million frames or more outside the suite."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fuzzer() -> Any:
    spec = importlib.util.spec_from_file_location("wire_fuzz", ROOT / "scripts" / "wire_fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_twenty_thousand_mutated_frames() -> None:
    fuzz = _fuzzer()
    corpus = fuzz.capture_corpus()
    kinds = {fuzz._op_code(frame) for frame in corpus}
    assert kinds == {fuzz.OP_QUERY, fuzz.OP_MSG, fuzz.OP_COMPRESSED}
    assert any(len(frame) > 21 and frame[20] == 0 and b"\x01" in frame[21:] for frame in corpus)
    # The run in a process of its own: its server's threads, log and resident memory are the only
    # ones there (in the suite's process, another test's leftover thread or engine would count).
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "wire_fuzz.py"), "--frames", "20000", "--seed", "1"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=1800,  # a bound for a hung run on a loaded machine; it takes about a minute alone
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    summary = re.search(
        r"(\d+) connections closed by the server, (\d+) findings; "
        r"resident (\d+) MiB at the start, (\d+) MiB at the end",
        done.stdout,
    )
    assert summary is not None, done.stdout[-4000:]
    closed, findings, rss_start, rss_end = (int(group) for group in summary.groups())
    assert findings == 0
    assert closed > 1000  # the mutations did reach the decoder's refusals
    # Memory does not grow with the frames (a finding past RSS_GROWTH_LIMIT); the figures, to see.
    assert 0 < rss_end * 2**20 < rss_start * 2**20 + fuzz.RSS_GROWTH_LIMIT, (rss_start, rss_end)
