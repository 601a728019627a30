"""The wire fuzzer (scripts/wire_fuzz.py), bounded: 20,000 mutated frames from
a captured pymongo corpus, with a fixed seed. No thread may die, nothing may
log a traceback, every connection answers or closes in time, ``ping`` works
throughout, and the guard data is intact and valid afterwards. The script
runs a million frames or more outside the suite."""

from __future__ import annotations

import importlib.util
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
    result = fuzz.run(20_000, seed=1, corpus=corpus)
    assert len(result.findings) == 0, result.findings.report()
    assert result.closed > 1000  # the mutations did reach the decoder's refusals
    # Memory does not grow with the frames (a finding past RSS_GROWTH_LIMIT); the figures, to see.
    assert 0 < result.rss_end < result.rss_start + fuzz.RSS_GROWTH_LIMIT, (result.rss_start, result.rss_end)
