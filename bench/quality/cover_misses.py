"""Why a covering answer misses a needed tool: for each step that needs several tools and
lacks one in its top ``k``, where that tool stands in the step's parts.

Each missing tool is counted once, as the first of: the step needs more than ``k`` tools;
the step was read as one part; the tool leads one of the parts but more parts than slots
were led (crowded out); it is 2nd or 3rd in some part, behind another tool (often a
look-alike); it is in no part's top 3. Routed as ``toolreach eval`` routes (the service's
index and encoder; vectors cached as ``bench.quality.cover_sets`` caches them).

    python -m bench.quality.cover_misses --data DIR [--only-prefix P] [--k 5]
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np

from app.cli.evaluate import load_dataset
from app.routing import ALL_STAGES, NamespaceView, RouteOptions, Router, query_texts
from app.routing.cover import relative_rows
from app.routing.scores import Scoring, stage_scores
from app.routing.signals import analyse_query
from app.services import build_encoder
from app.settings import Settings
from bench.common import TextCache, add_cache, add_data, parser
from bench.registries import registered


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--only-prefix", default="", help="only the steps whose id starts with this")
    cli.add_argument("--k", type=int, default=5)
    add_cache(cli, "/tmp/toolreach_cover")
    args = cli.parse_args(argv)
    tools, queries = load_dataset(args.data)
    steps = [q for q in queries if q.id.startswith(args.only_prefix) and len(q.relevant) > 1]
    settings = Settings()
    encoder = TextCache(build_encoder(settings), args.cache)
    why: collections.Counter[str] = collections.Counter()
    missed = 0
    with registered(tools, settings, encoder) as (services, snapshot):
        index, config, cosines = snapshot.index, services.index.config, services.cosines
        router, view, options = (
            Router(config, cosines=cosines),
            NamespaceView(index),
            RouteOptions(k=args.k),
        )
        for step in steps:
            texts = query_texts(step.text)
            vectors = encoder.encode(texts)
            answer = router.route(view, step.text, vectors, options, texts=texts)
            missing = step.relevant - {c.name for c in answer}
            if not missing:
                continue
            missed += 1
            if len(step.relevant) > args.k:
                why[f"the step needs more than {args.k} tools"] += len(missing)
                continue
            if len(texts) == 1:
                why["the step was read as one part"] += len(missing)
                continue
            rows = analyse_query(index, step.text, texts)
            # every tool scored (depth 0): where each needed tool stands in each part
            scoring = Scoring(index, rows, vectors, None, config, ALL_STAGES, cosines, 0)
            scores = stage_scores(scoring)
            assert scores.parts is not None
            rel = relative_rows(scores.parts)
            for name in missing:
                at = int(np.flatnonzero(scores.tool_ids == index.positions[name])[0])
                rank = int(min((row > row[at]).sum() for row in rel))
                if rank == 0:
                    why["it leads a part, crowded out by more parts than slots"] += 1
                elif rank <= 2:
                    why["2nd or 3rd in a part, behind another tool"] += 1
                else:
                    why["in no part's top 3"] += 1
    encoder.save()
    print(
        f"{args.data.name}: {len(steps)} steps need several tools, {missed} miss one at k={args.k}"
    )
    for reason, count in why.most_common():
        print(f"  {count:5d} missing tools: {reason}")


if __name__ == "__main__":
    main()
