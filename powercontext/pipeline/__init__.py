"""The background pipeline (seed 002, docs/architecture.md): captured sessions and task outcomes
become Memory and pending review candidates."""
