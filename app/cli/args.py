"""Argument types of the `toolreach` command line: each refuses a bad value with a message
argparse prints as ``argument --x: <message>`` (never a stack trace, never a silent clamp)."""

from __future__ import annotations

import argparse
import math

MAX_DAYS = 36_500  # a hundred years: further back than any route event


def finite(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"not a finite number: {value!r}")
    return number


def whole(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None


def days(value: str) -> float:
    """An age in days: more than 0, at most ``MAX_DAYS``."""
    number = finite(value)
    if not 0 < number <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_DAYS}")
    return number


def share(value: str) -> float:
    """A share from 0 to 1, both included."""
    number = finite(value)
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return number


def fraction(value: str) -> float:
    """A share strictly between 0 and 1."""
    number = finite(value)
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), not {value}")
    return number


def not_negative(value: str) -> int:
    number = whole(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {number}")
    return number


def at_least_one(value: str) -> int:
    number = whole(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def port(value: str) -> int:
    number = whole(value)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is 1 to 65535, not {number}")
    return number
