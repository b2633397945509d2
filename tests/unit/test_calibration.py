"""A namespace's calibration (app/routing/calibration.py): isotonic, so it never reorders."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.routing.calibration import MIN_LABELS, Calibration, expected_calibration_error


def test_too_few_labels_fit_nothing() -> None:
    assert Calibration.fit([0.5] * (MIN_LABELS - 1), [True] * (MIN_LABELS - 1)) is None


def test_an_overconfident_model_is_brought_down_to_its_accuracy() -> None:
    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.6, 1.0, 2000)
    hit = rng.uniform(size=2000) < confidence - 0.3  # right 30 points less often than it says
    fitted = Calibration.fit(confidence.tolist(), hit.tolist())
    assert fitted is not None
    before = expected_calibration_error(confidence.tolist(), hit.tolist())
    after = expected_calibration_error([fitted(c) for c in confidence], hit.tolist())
    assert before > 0.25 and after < 0.05


def test_the_map_never_decreases() -> None:
    rng = np.random.default_rng(1)
    confidence = rng.uniform(size=500)
    hit = rng.uniform(size=500) < 0.5
    fitted = Calibration.fit(confidence.tolist(), hit.tolist())
    assert fitted is not None
    grid = [fitted(x) for x in np.linspace(0, 1, 101)]
    assert all(b >= a for a, b in itertools.pairwise(grid))


def test_it_round_trips_through_json_and_refuses_a_broken_one() -> None:
    fitted = Calibration.fit([i / 100 for i in range(100)], [i % 3 == 0 for i in range(100)])
    assert fitted is not None
    assert Calibration.from_json(fitted.to_json()) == fitted
    with pytest.raises(ValueError):
        Calibration.from_json({"knots": [0.1, 0.2], "values": [0.5], "labels": 3})


def test_a_platt_fit_is_increasing_and_brings_an_overconfident_model_down() -> None:
    rng = np.random.default_rng(2)
    confidence = rng.uniform(0.5, 1.0, 400)
    hit = rng.uniform(size=400) < confidence - 0.25
    fitted = Calibration.platt(confidence.tolist(), hit.tolist())
    assert fitted is not None
    grid = [fitted(x) for x in np.linspace(0, 1, 101)]
    assert all(b >= a for a, b in itertools.pairwise(grid))
    after = expected_calibration_error([fitted(c) for c in confidence], hit.tolist())
    assert expected_calibration_error(confidence.tolist(), hit.tolist()) > 0.2 and after < 0.06
