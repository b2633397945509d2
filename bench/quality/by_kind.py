"""hit@1 and recall@3 of a labelled dataset per ``kind`` of query, and the steps that miss.

For a set whose queries carry a ``kind`` (``tests/data/bilingual``: ``zh>en``, ``en>zh``,
``mixed``, ``zh>zh``, ``en>en``). The cards are indexed as the service indexes them
(``card_to_doc``, the default encoder, its multilingual columns) and each step is ranked by
``Router.route`` with the default config, as ``toolreach eval`` does, without the database:

    python -m bench.quality.by_kind --data tests/data/bilingual [--misses 3] [--fixed-weights]
        [--no-examples]

``--fixed-weights`` indexes without the multilingual columns: the same weights for every pair,
as the router was before app/routing/language.py. ``--no-examples``: the cards' examples do
not vote (app/routing/examples.py), as before they did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from app.embedding.encoders import make_encoder, multilingual_dims
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    embedding_text,
    query_texts,
    step_window,
)
from app.routing.examples import card_examples
from app.tools.catalog import card_to_doc, parse_batch
from bench.common import add_data, dataset, parser


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--misses", type=int, default=0, help="list steps ranked below this")
    cli.add_argument("--fixed-weights", action="store_true", help="no per-pair weights")
    cli.add_argument("--no-examples", action="store_true", help="card examples do not vote")
    args = cli.parse_args(argv)
    tools, queries = dataset(args.data)
    docs = [card_to_doc(card) for card in parse_batch(tools, "bench").cards]
    encoder, config = make_encoder(), RouterConfig()
    vectors = encoder.encode([embedding_text(doc) for doc in docs])
    columns = None if args.fixed_weights else multilingual_dims(encoder)
    index = RouterIndex.build(docs, vectors, config, multilingual=columns)
    owners = [doc.name for doc in docs for example in doc.examples if example.strip()]
    texts = [example for doc in docs for example in doc.examples if example.strip()]
    examples = None
    if texts and not args.no_examples:  # each embedded as a step is (step_window)
        examples = card_examples(index, owners, encoder.encode([step_window(t) for t in texts]))
    ranks: dict[str, list[int]] = defaultdict(list)
    router, view = Router(config), NamespaceView(index, examples=examples)
    for query in queries:
        vec = encoder.encode(query_texts(query["query"]))
        found = router.route(view, query["query"], vec, RouteOptions(k=10))
        names = [c.name for c in found]
        rank = min((names.index(n) + 1 for n in query["relevant"] if n in names), default=99)
        for kind in (query.get("kind", "all"), "all"):
            ranks[kind].append(rank)
        if args.misses and rank > args.misses:
            print(f"{query.get('id', '')}\trank {rank}\t{query['query']}\t{names[:3]}")
    for kind, of_kind in ranks.items():
        hit1 = sum(r == 1 for r in of_kind) / len(of_kind)
        recall3 = sum(r <= 3 for r in of_kind) / len(of_kind)
        print(f"{kind:8} {len(of_kind):4} queries  hit@1 {hit1:.3f}  recall@3 {recall3:.3f}")


if __name__ == "__main__":
    main()
