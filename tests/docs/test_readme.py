"""The README is a user's first page and runs as written: every ```sh block in one bash
session against a service started as `make run` starts one, from a scratch folder as a clean
clone would be, and every ```python block; its sample answers have the shape the service
answers now (scripts/doc_samples.py --write regenerates them; the values are the default
encoder's, the shapes do not depend on it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doc_samples() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "doc_samples", ROOT / "scripts" / "doc_samples.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_samples"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def walked() -> object:
    return samples.walk(encoder="fake")


samples = doc_samples()


def test_every_block_runs_as_written(walked: object) -> None:
    assert samples.failures(walked) == []
    ran = {r.block.language for r in walked.ran}  # type: ignore[attr-defined]
    assert ran == {"sh", "python"}
    skipped = [b.first_line for b in walked.skipped]  # type: ignore[attr-defined]
    assert skipped == list(samples.NOT_RUN), "a README block is neither run nor listed"


def test_the_sample_answers_are_what_the_service_answers(walked: object) -> None:
    with_samples = [r for r in walked.ran if r.block.sample is not None]  # type: ignore[attr-defined]
    assert len(with_samples) >= 4
    assert samples.drifted(walked) == []


def test_the_readme_stays_a_first_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 260, "details belong in docs/, one link away"
    text = "\n".join(lines)
    assert "TOOLREACH_ADMIN_KEYS=$ADMIN " not in text  # a key, not a whole header
    assert "\ntoolreach " not in text  # not on PATH outside the virtual environment


def test_a_changed_shape_is_caught() -> None:
    shown = {"candidates": [{"name": "a", "score": 1.0, "stages": {"keyword": 0.5}}]}
    grown = {
        "candidates": [{"name": "a", "score": 1.4, "stages": {"keyword": 0.5, "learned": 0.4}}]
    }
    assert samples.shape(shown) != samples.shape(grown)
    assert samples.shape(shown) == samples.shape(
        {"candidates": [{"name": "b", "score": 2, "stages": {"keyword": 1}}]}
    )


def test_pretty_is_the_same_json() -> None:
    value = {"a": [{"b": "x" * 60, "c": [1, 2, 3]}] * 3, "d": None}
    assert __import__("json").loads(samples.pretty(value, width=40)) == value
