"""The measurements of speed, throughput and memory (docs/BENCHMARKS.md)."""
