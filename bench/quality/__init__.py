"""The measurements of how good the answers are (docs/ROUTING.md, docs/BENCHMARKS.md)."""
