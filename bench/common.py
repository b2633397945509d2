"""What the benchmarks share, so that each reads as its measurement alone (with
``bench.servers``, a served build, and ``bench.registries``, a registry in this process):

- numbers: ``percentile``, ``ms``, ``median_run``, ``add_up`` (a function timed in place);
- this machine: ``cpu_seconds``, ``peak_memory_mb``, ``rss_mib``, ``load``;
- arguments: ``parser`` and the options several scripts take (``add_data``, ``add_json``...),
  ``write_report``;
- data: ``QUERIES`` (ten short steps), ``read_jsonl``, ``dataset``, ``shared_data``,
  ``public_steps``; embedding: ``step_rows``, ``cached_encode``, ``TextCache`` (an encoder
  that embeds each text once).

Importing it loads no model, so every script's ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from app.embedding.encoders import Encoder

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "default"
WARM_UP = 30  # unmeasured calls before a latency series: the first calls grow buffers
Run = TypeVar("Run", bound=Mapping[str, Any])
# The ten steps the latency series and the load client send by default.
QUERIES = [
    "where is my parcel for order o1234",
    "cancel the meeting with the design team tomorrow at 3pm",
    "convert 250 euros to dollars",
    "send an email to anna@example.com about the invoice",
    "what will the weather be like in Lyon this weekend",
    "find the contract we signed with Acme last year",
    "refund the payment for subscription s99",
    "book a hotel room in Tokyo for two nights",
    "export the analytics report for March as csv",
    "restore yesterday's backup of the billing database",
]


# --- numbers ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; 0 for none."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def median_run(runs: Sequence[Run], key: str) -> Run:
    """The run whose ``key`` is the median of the runs' (the upper one of an even count)."""
    return sorted(runs, key=lambda run: run[key])[len(runs) // 2]


def add_up(
    spent: dict[str, float], label: str, function: Callable[..., Any], clock: Callable[[], float]
) -> Callable[..., Any]:
    """``function``, adding the ``clock`` time of each call to ``spent[label]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = clock()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += clock() - started

    return wrapper


# --- this machine -------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kib(field: str, pid: int | str) -> int | None:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{field}:")), None)


def peak_memory_mb(pid: int | str = "self") -> float:
    """The peak resident memory (VmHWM) of a process, in MiB."""
    kib = _status_kib("VmHWM", pid)
    return float("nan") if kib is None else round(kib / 1024, 1)


def rss_mib(pid: int | str = "self") -> float:
    """The resident memory (VmRSS) of a process, in MiB; 0 once it is gone."""
    return round((_status_kib("VmRSS", pid) or 0) / 1024, 1)


def load() -> str:
    """The load averages of /proc/loadavg: 1, 5 and 15 minutes."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- arguments ----------------------------------------------------------------------------


def parser(doc: str | None, **kwargs: Any) -> argparse.ArgumentParser:
    """A script's parser, described by the first paragraph of its docstring."""
    first = (doc or "").strip().split("\n\n")[0]
    return argparse.ArgumentParser(description=" ".join(first.split()), **kwargs)


def add_data(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--data", type=Path, required=required, help="a folder of tools.jsonl + queries.jsonl"
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, help="also write the report to this file")


def add_baseline(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path, help="another checkout, run side by side")


def add_cache(parser: argparse.ArgumentParser, default: str = "/tmp/toolreach_emb") -> None:
    parser.add_argument(
        "--cache", type=Path, default=Path(default), help="vectors kept here by text"
    )


def add_prefixes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only-prefix", help="only the steps whose id starts with this")
    parser.add_argument("--skip-prefix", help="leave out the steps whose id starts with this")


def write_report(report: Any, path: Path | None) -> None:
    """Print the report as JSON, and write it to ``path`` too if given."""
    text = json.dumps(report, indent=2)
    print(text)
    if path is not None:
        path.write_text(text + "\n")


# --- data ---------------------------------------------------------------------------------


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """One JSON object per non-blank line (the first ``limit``)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines[:limit]]


def dataset(
    data: Path, limit: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A dataset folder's tools and (the first ``limit``) queries, as their files hold them
    (``app.cli.evaluate.load_dataset`` also checks and renames them)."""
    return read_jsonl(data / "tools.jsonl"), read_jsonl(data / "queries.jsonl", limit)


def shared_data() -> Path:
    """The public sets: ``shared/data`` beside this checkout or above it."""
    for folder in [ROOT, *ROOT.parents]:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return Path(os.environ.get("TOOLREACH_SHARED_DATA", "/work/shared/data"))


def public_steps(data: Path) -> list[str]:
    """MetaTool's and Seal-Tools' labelled queries (4,143), shuffled once (seed 7)."""
    files = [data / name / "queries.jsonl" for name in ("metatool", "seal-tools")]
    queries = [q["query"] for path in files for q in read_jsonl(path)]
    random.Random(7).shuffle(queries)
    return queries


def step_rows(encode: Callable[[list[str]], np.ndarray], steps: Sequence[str]) -> list[np.ndarray]:
    """Per step, the rows ``route`` takes (``query_texts``: the step, then its parts), all
    the steps' texts embedded in one call."""
    from app.routing import query_texts

    groups = [query_texts(step) for step in steps]
    rows = np.asarray(encode([text for group in groups for text in group]), dtype=np.float32)
    bounds = np.cumsum([0, *(len(group) for group in groups)])
    return [rows[bounds[i] : bounds[i + 1]] for i in range(len(groups))]


def cached_encode(encoder: Encoder, texts: Sequence[str], cache: Path) -> np.ndarray:
    """``encoder.encode(texts)``, memoised as one .npy keyed by the encoder name and texts."""
    digest = hashlib.sha256("\x1e".join([encoder.name, *texts]).encode()).hexdigest()[:24]
    path = cache / f"{encoder.name.replace('/', '_')}-{digest}.npy"
    if path.exists():
        return np.load(path)
    cache.mkdir(parents=True, exist_ok=True)
    vectors = encoder.encode(list(texts))
    np.save(path, vectors)
    return vectors


class TextCache:
    """An encoder that embeds each text once (in chunks of 256), kept by text; with a
    ``cache`` folder also on disk, one pickle per encoder name, for the next run."""

    def __init__(self, inner: Encoder, cache: Path | None = None) -> None:
        from app.embedding.encoders import multilingual_dims

        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.multilingual_dims = multilingual_dims(inner)
        digest = hashlib.sha256(inner.name.encode()).hexdigest()[:16]
        self.path = None if cache is None else cache / f"vectors-{digest}.pkl"
        self.known: dict[str, np.ndarray] = {}
        if self.path is not None and self.path.is_file():
            self.known = pickle.loads(self.path.read_bytes())
        self.added = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        for start in range(0, len(missing), 256):
            chunk = missing[start : start + 256]
            rows = np.asarray(self.inner.encode(chunk), dtype=np.float32)
            self.known.update(zip(chunk, rows, strict=True))
            self.added += len(chunk)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.known[t] for t in texts])

    def save(self) -> None:
        if self.added and self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.known))
