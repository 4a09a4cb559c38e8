"""Benchmark sections used by the ``bench`` and ``bench_http`` commands (never by the product)."""
