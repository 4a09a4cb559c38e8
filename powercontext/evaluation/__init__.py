"""Benchmarks and retrieval evaluation (management commands); not part of the product's request path."""
