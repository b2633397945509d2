"""ToolReach's benchmarks, run from the repository root as ``python -m bench.<folder>.<script>``.

- ``bench.tools``: scripts whose output is committed as code (``fit_confidence`` writes
  ``app/routing/confidence_fit.py``); type-checked, each with a quick test on small data.
- ``bench.perf``: speed, throughput and memory.
- ``bench.quality``: how good the answers are.
- ``bench/results/``: the JSON reports that docs/BENCHMARKS.md links to.

What the scripts share lives in ``bench.common``. docs/BENCHMARKS.md gives each figure with
the command that reproduces it.
"""

import os

# The models come from Python packages; the benchmarks never ask a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
