"""Scale benchmark (issue 35), one run per database.

``--sections catch_up`` (the default): writes ``--entries`` notes (10,000) to a fresh scope in
bulk through the service layer (``memory_apply_changes``, 500 a transaction) with this process's
embedder running, then waits until every one has a vector: the seeding time, the backlog at the
last write and the catch-up time after it (entries/s), one worker process
(``powercontext.evaluation.bench.scale``). The model is loaded before the clock starts.

With ``--locomo PATH`` the notes are a LoCoMo-format file's turns (``Speaker: text``, ~35 word
pieces each against the synthetic notes' ~115; taken in turn, numbered when they start again).
``--sections threads``: the embedder one model run at a time (as before issue 35) against
several at once (``POWERCONTEXT_EMBED_THREADS``), interleaved over ``--rounds`` rounds of
``--round-entries`` entries per mode on fresh scopes: entries/s of each, and CPU ms per entry.

``--sections prepare --url http://127.0.0.1:PORT`` (a gunicorn on the same database, started
without the token requirement as for ``bench_http``): for each of ``--sizes`` (1,000 and
100,000) a fresh scope seeded the same way and embedded, then hybrid prepare on new prompts with
``--clients`` (8) concurrent clients for ``--seconds`` (p50 / p99 / requests per second) — three
words almost no note holds, three of the scope's most used words, a 40-word paragraph, each for
``--seconds`` — and ``--samples`` sequential remembers (p50), and the ratios largest vs smallest
size (rare-word prompts).

``--sections fleet --url … --server-pid PID`` (the gunicorn's master, ``-w 4``, started with a
small ``POWERCONTEXT_VECTOR_CACHE_MB`` and ``POWERCONTEXT_OPERATOR_TOKEN``, the same token in
this process's environment): ``--scopes`` scopes (``scale-fleet-…``) of ``--fleet-entries``
notes, seeded and embedded once (kept for the next run on the same database); then prepare on a
cold (evicted) scope and on a warm one, one client, ``--samples`` each (p50 / p95, evictions per
cold request from ``/metrics``), ``--clients`` asking all scopes for ``--seconds``, and each
worker's resident memory now and at its peak, with the bytes the caches hold. With
``--fleet-copies`` only the first scope is seeded and embedded; the others are SQL
copies of it (``powercontext.evaluation.bench.scope_copy``), so 1,000 scopes take minutes.

``--sections after_write --scope NAME`` (an existing scope, e.g. one the prepare section seeded
and embedded): in process, ``--rounds`` hybrid prepares with no write between them, then
``--rounds`` times a remember followed by two prepares (the first after the write, and the
next): p50 / p95 of each and of the remembers (``bench_after_write``).

Writes fresh scopes (``scale-…``): use a throwaway database (scripts/bench.sh's way: migrate,
flush, then run with ``CELERY_BROKER_URL`` unset so that the embedder is this process's thread).
"""

from __future__ import annotations

import json
import resource
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from powercontext.evaluation.bench.common import load_average
from powercontext.evaluation.bench.scale import (
    bench_after_write,
    bench_catch_up,
    bench_fleet,
    bench_prepare_sizes,
    bench_threads,
    fleet,
)
from powercontext.evaluation.retrieval_eval import memory_text, parse_conversations


def _locomo_turns(path: str) -> list[str]:
    """Each distinct turn of a LoCoMo-format file as the evaluation remembers it (``Speaker: text``)."""
    try:
        with open(path, encoding="utf-8") as handle:
            conversations = parse_conversations(json.load(handle))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"--locomo: cannot read {path} as a LoCoMo file ({type(exc).__name__})") from exc
    texts = [
        text
        for conversation in conversations
        for turn in conversation.turns
        if (text := memory_text(turn.text))
    ]
    if not texts:
        raise CommandError("--locomo: the file has no turns")
    return list(dict.fromkeys(texts))


class Command(BaseCommand):
    help = "Scale benchmark: embedding catch-up after a bulk write; prepare over HTTP at 1k vs 100k."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--sections",
            default="catch_up",
            help="comma-separated: catch_up, threads, prepare, fleet, after_write",
        )
        parser.add_argument("--entries", type=int, default=10000, help="notes written for the catch-up")
        parser.add_argument(
            "--locomo",
            help="catch_up section: take the notes from this LoCoMo-format file's turns (in turn, numbered"
            " when they start again) instead of the synthetic corpus",
        )
        parser.add_argument(
            "--rounds", type=int, default=4, help="threads section: interleaved rounds; after_write: rounds"
        )
        parser.add_argument("--scope", help="after_write section: the existing scope to write and prepare in")
        parser.add_argument(
            "--round-entries", type=int, default=400, help="threads section: entries per mode and round"
        )
        parser.add_argument("--url", help="prepare section: the gunicorn serving this database")
        parser.add_argument("--sizes", default="1000,100000", help="prepare section: scope sizes")
        parser.add_argument("--clients", type=int, default=8, help="prepare section: concurrent clients")
        parser.add_argument("--seconds", type=float, default=20.0, help="prepare section: seconds per size")
        parser.add_argument("--samples", type=int, default=200, help="prepare section: sequential remembers")
        parser.add_argument("--scopes", type=int, default=12, help="fleet section: scopes")
        parser.add_argument(
            "--fleet-entries", type=int, default=1000, help="fleet section: entries per scope"
        )
        parser.add_argument(
            "--fleet-copies",
            action="store_true",
            help="fleet section: scopes after the first are SQL copies of it",
        )
        parser.add_argument(
            "--server-pid", type=int, help="fleet section: the gunicorn master's pid (memory)"
        )
        parser.add_argument("--json", dest="json_path", help="also write results to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        sections = {s.strip() for s in options["sections"].split(",") if s.strip()}
        results: dict[str, Any] = {"database": connection.vendor, "load_average_start": load_average()}
        if "catch_up" in sections:
            texts = _locomo_turns(options["locomo"]) if options["locomo"] else None
            results["catch_up"] = bench_catch_up(options["entries"], self.stdout.write, texts=texts)
        if "threads" in sections:
            results["threads"] = bench_threads(options["round_entries"], options["rounds"], self.stdout.write)
        if "prepare" in sections:
            if not options["url"]:
                raise CommandError("--sections prepare needs --url")
            results["prepare"] = bench_prepare_sizes(
                options["url"].rstrip("/"),
                [int(size) for size in options["sizes"].split(",")],
                options["clients"],
                options["seconds"],
                options["samples"],
                self.stdout.write,
            )
        if "after_write" in sections:
            if not options["scope"]:
                raise CommandError("--sections after_write needs --scope")
            try:
                results["after_write"] = bench_after_write(
                    options["scope"], options["rounds"], self.stdout.write
                )
            except ValueError as exc:
                raise CommandError(f"--sections after_write: {exc}") from exc
        if "fleet" in sections:
            if not options["url"]:
                raise CommandError("--sections fleet needs --url")
            if not settings.POWERCONTEXT_OPERATOR_TOKEN:
                raise CommandError("--sections fleet reads /metrics: set POWERCONTEXT_OPERATOR_TOKEN")
            names = fleet(
                options["scopes"], options["fleet_entries"], self.stdout.write, copies=options["fleet_copies"]
            )
            results["fleet"] = bench_fleet(
                options["url"].rstrip("/"),
                names,
                options["samples"],
                options["clients"],
                options["seconds"],
                options["server_pid"],
                settings.POWERCONTEXT_OPERATOR_TOKEN,
                self.stdout.write,
            )
        results["load_average_end"] = load_average()
        results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)
