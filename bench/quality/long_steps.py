"""Long steps, measured: which part of a step longer than the router reads should it read?

An agent sometimes sends more than the step: its whole conversation, the step last, or the
step followed by a pasted document. Built from a labelled dataset's own queries (a seeded
sample), each routed through the service's own index (the ``toolreach eval`` path) as:

- ``plain``: the query alone;
- ``conversation``: the query as the last turn of a ~5,900-character conversation whose
  earlier turns are other queries of the dataset (asking for other tools) and short replies;
- ``document``: the query, then a ~5,900-character pasted document (Python's reference text
  from the standard library's ``pydoc_data``).

Each is read through several windows of N characters, a step no longer than N read whole:
``head`` (the first N), ``tail`` (the last N), ``head¼+tail¾`` and ``head½+tail½`` (the
first N/4 or N/2 and the last 3N/4 or N/2), and ``as served`` (what the service reads,
``app.routing.step_window``); ``whole`` is the text as given, the service's own window
switched off (as the router read a 5,900-character step before it had one); ``--only`` takes
``head+tail H+T`` for any sizes. Prints hit@1 and recall@3 (k = 10) per construction and
window.

    python -m bench.quality.long_steps --data DIR [--sample 200] [--sizes 500,1000,2000]
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pydoc_data.topics import topics

from app.cli.evaluate import Query, load_dataset, mean_scores, score
from app.routing import NamespaceView, RouteOptions, Router, RouterIndex, step_window, window
from app.services import Services
from bench.common import add_data, parser, step_rows
from bench.registries import registered

LENGTH = 5900  # the step of issue 17: an agent pasting its conversation
REPLIES = ("Done.", "Here is what I found.", "OK, finished that.", "Sure, that is sorted.")
Window = Callable[[str], str]


def conversation(query: str, others: Sequence[str], rng: random.Random) -> str:
    """``query`` as the last user turn after earlier turns drawn from ``others``."""
    turns: list[str] = []
    last = f"User: {query}"
    while sum(len(t) + 1 for t in turns) + len(last) < LENGTH:
        turns.append(f"User: {rng.choice(others)}\nAssistant: {rng.choice(REPLIES)}")
    return "\n".join([*turns, last])


def document(query: str) -> str:
    """``query``, then a pasted document making the step ~``LENGTH`` characters."""
    text = " ".join(topics[name] for name in ("assignment", "for", "while", "if", "with"))
    text = " ".join(text.split())
    return f"{query}\n\n{text[: max(LENGTH - len(query) - 2, 0)]}"


@contextmanager
def read_whole(on: bool) -> Iterator[None]:
    """While ``on``, the service's window reads every step whole."""
    kept = window.STEP_WHOLE
    window.STEP_WHOLE = sys.maxsize if on else kept
    try:
        yield
    finally:
        window.STEP_WHOLE = kept


def head_and_tail(step: str, head: int, tail: int) -> str:
    """The first ``head`` and the last ``tail`` characters, or the whole step if it is no
    longer than both."""
    if len(step) <= head + tail:
        return step
    return f"{step[:head]}\n…\n{step[len(step) - tail :]}"


def first(step: str, n: int) -> str:
    return step[:n]


def last(step: str, n: int) -> str:
    return step[-n:]


def windows(sizes: Sequence[int]) -> dict[str, Window]:
    """The windows compared, by name."""
    out: dict[str, Window] = {"whole": lambda s: s, "as served": step_window}
    for n in sizes:
        out[f"head {n}"] = partial(first, n=n)
        out[f"tail {n}"] = partial(last, n=n)
        out[f"head¼+tail¾ {n}"] = partial(head_and_tail, head=n // 4, tail=n - n // 4)
        out[f"head½+tail½ {n}"] = partial(head_and_tail, head=n // 2, tail=n - n // 2)
    return out


def named_window(name: str) -> Window:
    """A window given by name as ``head+tail H+T`` (any sizes), e.g. ``head+tail 125+500``."""
    kind, _, sizes = name.partition(" ")
    if kind != "head+tail":
        raise SystemExit(f"unknown window {name!r}")
    head, _, tail = sizes.partition("+")
    return lambda s: head_and_tail(s, int(head), int(tail))


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--sample", type=int, default=200)
    cli.add_argument("--sizes", default="500,1000,2000")
    cli.add_argument("--seed", type=int, default=17)
    cli.add_argument("--only", help="comma-separated window names to run (default: all)")
    cli.add_argument("--kinds", default="plain,conversation,document")
    args = cli.parse_args(argv)
    tools, queries = load_dataset(args.data)
    rng = random.Random(args.seed)
    sample = rng.sample(queries, min(args.sample, len(queries)))
    steps: dict[str, list[str]] = {
        "plain": [q.text for q in sample],
        "conversation": [
            conversation(q.text, [o.text for o in queries if not o.relevant & q.relevant], rng)
            for q in sample
        ],
        "document": [document(q.text) for q in sample],
    }
    steps = {kind: steps[kind] for kind in args.kinds.split(",")}
    reads = windows([int(n) for n in args.sizes.split(",")])
    if args.only:
        reads = {name: reads.get(name) or named_window(name) for name in args.only.split(",")}
    with registered(tools) as (services, snapshot):
        print(f"{args.data.name}: {len(snapshot.cards)} tools, {len(sample)} sampled queries")
        for kind, texts in steps.items():
            for label, read in reads.items():
                with read_whole(label == "whole"):
                    metrics = measure(services, snapshot.index, sample, [read(t) for t in texts])
                print(
                    f"{kind:12s} {label:18s} hit@1 {metrics['hit@1']:.4f}  "
                    f"recall@3 {metrics['recall@3']:.4f}",
                    flush=True,
                )


def measure(
    services: Services, index: RouterIndex, sample: list[Query], texts: list[str]
) -> dict[str, float]:
    """The metrics of routing ``texts`` (one per sampled query), k = 10."""
    vectors = step_rows(services.encoder.encode, texts)
    router, view = Router(services.index.config, cosines=services.cosines), NamespaceView(index)
    rows = []
    for query, text, vector in zip(sample, texts, vectors, strict=True):
        ranked = router.route(view, text, vector, RouteOptions(k=10))
        rows.append(score([c.name for c in ranked], query.relevant))
    return mean_scores(rows)


if __name__ == "__main__":
    main()
