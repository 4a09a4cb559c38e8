"""The background pipeline (seed 002, ../shared/pipeline.md): sessions and task outcomes become Memory and pending candidates."""
