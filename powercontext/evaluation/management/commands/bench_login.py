"""Benchmark: the Review Inbox log-in, before (PBKDF2 first, Django's old default) and after
(Argon2 first, this project's setting), in one run.

Each sample is one POST of the log-in form to ``/accounts/login/`` through Django's test client:
the whole request (django-axes, the password check, the new session), answered with the redirect
to the Inbox. The variants take turns (the first one rotates), so they share the machine's load:

- ``pbkdf2``: PASSWORD_HASHERS with PBKDF2 first and the user's password stored as PBKDF2;
- ``argon2``: the configured PASSWORD_HASHERS (Argon2 first) and an Argon2 hash;
- ``upgrade``: the configured hashers and a PBKDF2 hash, the first log-in after the switch (it
  checks PBKDF2 and rewrites the hash as Argon2; the hash is reset before each sample, untimed).

Writes one user (``--username``, deleted at the end): use a throwaway database.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import identify_hasher, make_password
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import Client, override_settings

from powercontext.evaluation.bench.common import load_average, percentile

PBKDF2 = "django.contrib.auth.hashers.PBKDF2PasswordHasher"
PASSWORD = "bench-login-password-0123"  # noqa: S105 - a throwaway benchmark account
LOGIN = "/accounts/login/"


class Command(BaseCommand):
    help = "Log-in p50/p95 over N log-ins, PBKDF2 (before) vs Argon2 (after), interleaved in one run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-n", "--logins", type=int, default=30, help="log-ins per variant")
        parser.add_argument("--username", default="bench-login", help="the throwaway user (deleted after)")
        parser.add_argument("--json", dest="json_path", help="also write the results to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        runs = int(options["logins"])
        if runs < 1:
            raise CommandError("--logins must be at least 1")
        users = get_user_model()
        username = options["username"]
        if users.objects.filter(username=username).exists():
            raise CommandError(f"user {username!r} exists; pick another --username")
        user = users.objects.create(username=username)
        old_hashers = [PBKDF2, *(h for h in settings.PASSWORD_HASHERS if h != PBKDF2)]

        def store(algorithm: str) -> None:
            user.password = make_password(PASSWORD, hasher=algorithm)
            user.save(update_fields=["password"])

        def log_in(expect_algorithm: str) -> float:
            client = Client(REMOTE_ADDR="192.0.2.1")
            start = time.perf_counter()
            response = client.post(LOGIN, {"username": username, "password": PASSWORD})
            elapsed = (time.perf_counter() - start) * 1000
            if response.status_code != 302 or response["Location"] != settings.LOGIN_REDIRECT_URL:
                raise CommandError(f"log-in failed: {response.status_code}")
            user.refresh_from_db(fields=["password"])
            if identify_hasher(user.password).algorithm != expect_algorithm:
                raise CommandError(f"expected an {expect_algorithm} hash after the log-in")
            return elapsed

        def before() -> float:
            with override_settings(PASSWORD_HASHERS=old_hashers):
                store("pbkdf2_sha256")
                return log_in("pbkdf2_sha256")

        def after() -> float:
            store("argon2")
            return log_in("argon2")

        def upgrade() -> float:
            store("pbkdf2_sha256")
            return log_in("argon2")

        variants: dict[str, Callable[[], float]] = {"pbkdf2": before, "argon2": after, "upgrade": upgrade}
        samples: dict[str, list[float]] = {name: [] for name in variants}
        try:
            for call in variants.values():  # one untimed warm-up each (imports, caches)
                call()
            names = list(variants)
            for i in range(runs):
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].append(variants[name]())
        finally:
            user.delete()

        results: dict[str, Any] = {"logins": runs, "load_average": load_average(), "variants": {}}
        self.stdout.write(f"log-in over {runs} log-ins per variant (load average {results['load_average']})")
        self.stdout.write(f"{'variant':<10} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        for name, values in samples.items():
            row = {
                "p50_ms": round(statistics.median(values), 1),
                "p95_ms": round(percentile(values, 0.95), 1),
                "max_ms": round(max(values), 1),
            }
            results["variants"][name] = row
            self.stdout.write(f"{name:<10} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['max_ms']:>8}")
        before_p50 = results["variants"]["pbkdf2"]["p50_ms"]
        after_p50 = results["variants"]["argon2"]["p50_ms"]
        results["argon2_vs_pbkdf2_p50"] = round(after_p50 / before_p50, 2) if before_p50 else None
        self.stdout.write(f"argon2 / pbkdf2 p50: {results['argon2_vs_pbkdf2_p50']}")
        if options.get("json_path"):
            with open(options["json_path"], "w", encoding="utf-8") as out:
                json.dump(results, out, indent=2)
