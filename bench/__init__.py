"""Benchmarks: `python -m bench [names] [--quick]` writes bench/RESULTS.md and bench/results.json."""
