"""The usage prior of stage 1: tools chosen often, and successfully, rank a little higher.

For each namespace and tool, feedback naming the tool adds a weight by outcome (success 1,
unknown 0.5, error 0), halved for every ``half_life_days`` of age:

    uses(t) = Σ weight(outcome) · 2^(−age / half_life)
    prior(t) = uses(t) / (uses(t) + SATURATION)            ∈ [0, 1)

Who made the reports counts (``app/loop/trust.py``): the same key, step and tool count once
(the newest), and a key's routes see its own uses whole, another key's at the agreement of
the keys that used the tool (``min(1, keys / trust_keys)``). ``PriorCache.get(namespace)``
is the prior of a key that made none of them; ``get(namespace, key)`` the key's own.

The saturating form keeps one lucky report from counting like a hundred, and bounds the
prior however popular a tool is; the router then adds ``prior_weight · min(prior, prior_cap)``
to the score, so a popular tool cannot crowd out a better match. A namespace without
feedback has no prior at all (cold start: ranking is exactly as without it).

:class:`PriorCache` recomputes the priors every ``refresh_seconds`` in a background thread
and swaps in a new immutable mapping; routes only read it.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.loop import repository as event_repository
from app.loop.repository import UsageRow
from app.loop.trust import Use, distinct_uses, tool_keys, unconfirmed, use_weights

log = logging.getLogger("toolreach.prior")

SATURATION = 5.0  # decayed uses at which a tool's prior reaches one half
OUTCOME_WEIGHT = {"success": 1.0, "unknown": 0.5, "error": 0.0}
HORIZON_HALF_LIVES = 10  # older feedback weighs under 1/1000: not read at all

Prior = Mapping[str, float]
_NO_KEYS: Mapping[str, Prior] = MappingProxyType({})


def decay(age_days: float, half_life_days: float) -> float:
    """Exponential decay: 1 today, 1/2 after one half-life."""
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


def saturate(uses: float) -> float:
    return uses / (uses + SATURATION)


def usage_priors(
    rows: Iterable[UsageRow], now: datetime, half_life_days: float
) -> dict[str, dict[str, float]]:
    """Namespace → tool → prior, from feedback counted per day."""
    uses: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        age = (now - row.day).total_seconds() / 86_400
        weight = OUTCOME_WEIGHT.get(row.outcome, 0.0) * row.count * decay(age, half_life_days)
        uses[row.namespace][row.chosen] += weight
    return {
        namespace: {tool: saturate(u) for tool, u in tools.items() if u > 0}
        for namespace, tools in uses.items()
    }


def weighted_rows(uses: Sequence[Use], weights: Sequence[float]) -> list[UsageRow]:
    """Each use as a row of ``usage_priors``, counted at its weight."""
    return [
        UsageRow(u.namespace, u.tool, u.outcome, u.at, w)
        for u, w in zip(uses, weights, strict=True)
        if w > 0
    ]


def keyed_priors(
    uses: Iterable[Use], now: datetime, half_life_days: float, needed: int
) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], dict[str, float]]]:
    """(namespace → the prior every key sees; (namespace, key) → that key's own prior, for
    a key whose uses of some tool are not confirmed by ``needed`` keys), from the uses
    (``app/loop/trust.py``)."""
    distinct = distinct_uses(uses)
    keys = tool_keys(distinct)
    shared = usage_priors(
        weighted_rows(distinct, use_weights(distinct, keys, needed)), now, half_life_days
    )
    own: dict[tuple[str, str], dict[str, float]] = {}
    for key, tools in unconfirmed(keys, needed).items():
        mine = [u for u in distinct if (u.namespace, u.tool) in tools]
        rows = weighted_rows(mine, use_weights(mine, keys, needed, key))
        for namespace, priors in usage_priors(rows, now, half_life_days).items():
            own[(namespace, key)] = {**shared.get(namespace, {}), **priors}
    return shared, own


class PriorCache:
    """Per-namespace priors, recomputed off the request path; reads never block."""

    def __init__(
        self, session_factory: sessionmaker[Session], half_life_days: float, needed: int = 1
    ) -> None:
        self._factory = session_factory
        self.half_life_days = half_life_days
        self.needed = needed  # trust_keys: keys that confirm a tool for every key
        self._priors: Mapping[str, Prior] = MappingProxyType({})
        # namespace → key → that key's own prior (keys with unconfirmed uses only)
        self._own: Mapping[str, Mapping[str, Prior]] = MappingProxyType({})
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, namespace: str, key: str | None = None) -> Prior | None:
        """The namespace's prior for the routes of ``key`` (None: a key that reported
        nothing there)."""
        if key is not None:
            own = self.own_priors(namespace).get(key)
            if own is not None:
                return own
        return self._priors.get(namespace)

    def own_priors(self, namespace: str) -> Mapping[str, Prior]:
        """Key → its own prior in ``namespace``, for the keys that have one (the same
        mapping until the next refresh)."""
        return self._own.get(namespace, _NO_KEYS)

    def namespaces(self) -> list[str]:
        return sorted(self._priors)

    def refresh(self, now: datetime | None = None) -> None:
        """Recompute every namespace's prior from the feedback, then swap it in whole."""
        now = now or datetime.now(UTC)
        since = now - timedelta(days=self.half_life_days * HORIZON_HALF_LIVES)
        with unit_of_work(self._factory) as session:
            uses = event_repository.keyed_uses(session, since)
        shared, own = keyed_priors(uses, now, self.half_life_days, self.needed)
        self._priors = MappingProxyType({ns: MappingProxyType(t) for ns, t in shared.items()})
        by_namespace: dict[str, dict[str, Prior]] = defaultdict(dict)
        for (namespace, key), tools in own.items():
            by_namespace[namespace][key] = MappingProxyType(tools)
        self._own = MappingProxyType(
            {ns: MappingProxyType(keys) for ns, keys in by_namespace.items()}
        )

    def start(self, interval: float) -> None:
        """Refresh now and every `interval` seconds, in a background thread."""

        def loop() -> None:
            while True:
                try:
                    self.refresh()
                except Exception:
                    log.exception("usage prior refresh failed; keeping the previous one")
                if self._stop.wait(interval):
                    return

        self._thread = threading.Thread(target=loop, name="usage-prior", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
