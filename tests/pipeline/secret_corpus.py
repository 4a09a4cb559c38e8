"""A fixed corpus of FAKE secrets for the redaction tests.

Every value here is synthetic: built from "FAKE", "EXAMPLE", "TEST" and counting patterns, never
a real credential. Each value is assembled from pieces at import time so that secret scanners
reading this file do not mistake it for a leaked key, and so nobody copies one as a template.
Each case puts its value inside text the way a session would (prose, env files, code, logs).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    type: str  # the type redact() reports
    secret: str  # the fake value that must not survive
    text: str  # the value in context


def _b64url(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


_AWS_ACCESS = "AK" + "IA" + "FAKE" + "EXAMPLE" + "12345"  # 20 characters
_AWS_SESSION_ACCESS = "AS" + "IA" + "TEST" + "EXAMPLE" + "67890"
_AWS_SECRET = "fAkE" + "Ex4mPlE" + "/K7MDENG/" + "bPxRfiCY" + "NOTAREALKEY0"  # 40 characters
_GITHUB_CLASSIC = "gh" + "p_" + "FAKE" + "0123456789abcdefABCDEF0123456789ab"
_GITHUB_APP = "gh" + "s_" + "TEST" + "9876543210ZYXWVUzyxwvu9876543210zy"
_GITHUB_OAUTH = "gh" + "o_" + "FAKE" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3h"
_GITHUB_FINE = "github" + "_pat_" + "11FAKE0000" + "EXAMPLE0aBcDeF_" + "gHiJkLmNoPqRsTuVwXyZ0123456789" * 2
_SLACK_BOT = "xo" + "xb-" + "000000000000-" + "111111111111-" + "FAKEfakeFAKEfakeFAKEfake"
_SLACK_USER = "xo" + "xp-" + "222222222222-" + "333333333333-" + "444444444444-" + "fake0test0value0example0"
_SLACK_WEBHOOK = (
    "https://hooks.slack.com/services/" + "T00000000/" + "B00000000/" + "FAKEfakeFAKEfake00000000"
)
_PEM_BODY = base64.b64encode(b"FAKE PRIVATE KEY MATERIAL FOR REDACTION TESTS ONLY, NOT A KEY " * 3).decode()
_PEM_LINES = [_PEM_BODY[i : i + 64] for i in range(0, len(_PEM_BODY), 64)]
_PEM_RSA = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\n" + "\n".join(_PEM_LINES) + "\n-----END RSA " + "PRIVATE KEY-----"
)
_PEM_OPENSSH = (
    "-----BEGIN OPENSSH "
    + "PRIVATE KEY-----\n"
    + "\n".join(_PEM_LINES[:2])
    + "\n-----END OPENSSH PRIVATE KEY-----"
)
# Cut off by the projection window: no END line.
_PEM_TRUNCATED = "-----BEGIN " + "PRIVATE KEY-----\n" + "\n".join(_PEM_LINES[:3])
_JWT = (
    _b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url({"sub": "fake-user-0000", "name": "Test Example", "iat": 1000000000})
    + "."
    + base64.urlsafe_b64encode(b"fake-signature-for-tests-only!!").rstrip(b"=").decode()
)
_PG_PASSWORD = "FakePgPass-2024!"
_MYSQL_PASSWORD = "not@real#pw"
_REDIS_PASSWORD = "fakeRedisSecret99"
_HIGH_ENTROPY = "Zx9Qp2Lm7Rt4Vb8Nc1Wd" + "Kf3Hs6Jy0Ue5"  # random-looking, 32 characters
_API_KEY_VALUE = "fake-" + "d41d8cd98f00b204"
_BEARER = "Fk3" + "test0token0value0" + "9xQ"

CORPUS: tuple[Case, ...] = (
    Case(
        "aws access key in prose",
        "aws_access_key",
        _AWS_ACCESS,
        f"The CI user key is {_AWS_ACCESS} (rotated monthly).",
    ),
    Case(
        "aws session key", "aws_access_key", _AWS_SESSION_ACCESS, f"AWS_ACCESS_KEY_ID={_AWS_SESSION_ACCESS}"
    ),
    Case(
        "aws secret key in an env file",
        "aws_secret_key",
        _AWS_SECRET,
        f"AWS_ACCESS_KEY_ID={_AWS_ACCESS}\nAWS_SECRET_ACCESS_KEY={_AWS_SECRET}\nAWS_REGION=eu-west-1",
    ),
    Case(
        "aws secret key in code",
        "aws_secret_key",
        _AWS_SECRET,
        f'client = boto3.client("s3", aws_secret_access_key="{_AWS_SECRET}")',
    ),
    Case("aws secret key in prose", "aws_secret_key", _AWS_SECRET, f"the aws secret key: {_AWS_SECRET}"),
    Case(
        "github classic token",
        "github_token",
        _GITHUB_CLASSIC,
        f"git clone https://{_GITHUB_CLASSIC}@github.com/o/r",
    ),
    Case("github app token", "github_token", _GITHUB_APP, f"GH_TOKEN={_GITHUB_APP}"),
    Case("github oauth token", "github_token", _GITHUB_OAUTH, f"token {_GITHUB_OAUTH} expired"),
    Case(
        "github fine-grained token", "github_token", _GITHUB_FINE, f"use {_GITHUB_FINE} for the release job"
    ),
    Case("slack bot token", "slack_token", _SLACK_BOT, f"SLACK_BOT_TOKEN={_SLACK_BOT}"),
    Case("slack user token", "slack_token", _SLACK_USER, f"posted with {_SLACK_USER}."),
    Case("slack webhook", "slack_webhook", _SLACK_WEBHOOK, f"curl -X POST {_SLACK_WEBHOOK} -d '{{}}'"),
    Case("rsa private key", "private_key", _PEM_BODY[:64], f"key.pem:\n{_PEM_RSA}\nthen chmod 600 key.pem"),
    Case("openssh private key", "private_key", _PEM_LINES[1], f"~/.ssh/id_ed25519 holds\n{_PEM_OPENSSH}\n"),
    Case("truncated private key", "private_key", _PEM_LINES[2], f"{_PEM_TRUNCATED}\n"),
    Case("jwt", "jwt", _JWT, f"Authorization header was {_JWT} and it expired"),
    Case(
        "postgres url",
        "url_password",
        _PG_PASSWORD,
        f"DATABASE_URL=postgres://powercontext:{_PG_PASSWORD}@db.internal:5432/powercontext",
    ),
    Case("mysql url", "url_password", _MYSQL_PASSWORD, f"mysql://root:{_MYSQL_PASSWORD}@127.0.0.1:3306/app"),
    Case(
        "redis url without user",
        "url_password",
        _REDIS_PASSWORD,
        f"CELERY_BROKER_URL=redis://:{_REDIS_PASSWORD}@cache:6379/0",
    ),
    Case(
        "redis url with user",
        "url_password",
        _REDIS_PASSWORD,
        f"rediss://default:{_REDIS_PASSWORD}@cache.example:6380",
    ),
    Case(
        "high entropy string",
        "high_entropy_string",
        _HIGH_ENTROPY,
        f"the signing salt is {_HIGH_ENTROPY}, keep it",
    ),
    Case(
        "api key assignment", "secret_keyword", _API_KEY_VALUE, f'config = {{"api_key": "{_API_KEY_VALUE}"}}'
    ),
    Case(
        "password in prose", "secret_keyword", "hunter2-fake", "the staging password: hunter2-fake (ask ops)"
    ),
    Case(
        "bearer header",
        "bearer_token",
        _BEARER,
        f"curl -H 'Authorization: Bearer {_BEARER}' https://api.test",
    ),
)

# Ordinary technical text that must survive redaction unchanged.
BENIGN: tuple[str, ...] = (
    "Run `make test` then `ruff check .` before committing; CI runs both databases.",
    "See /usr/lib/python3.11/site-packages/django/db/models/query.py line 1523.",
    "Fixed in commit 3f2a9c1e4b5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f, see PR #482.",
    "The candidate id is 123e4567-e89b-12d3-a456-426614174000 (a UUID4).",
    "Upper-case UUID 123E4567-E89B-12D3-A456-426614174000 from the admin.",
    "Use HTTP2ServerPushHandlerFactory and OAuth2AuthorizationCodeFlow in the client.",
    "PostgreSQL15Migration and X509CertificateValidatorV2 and sha256WithRSAEncryption4096 are names.",
    "The setting POWERCONTEXT_OPENAI_API_KEY_FILE points at /run/secrets/openai_key.",
    "password = os.environ['DB_PASSWORD']  # read from the environment",
    "api_key: ${OPENAI_API_KEY}",
    "PASSWORD_HASHERS = ['django.contrib.auth.hashers.MD5PasswordHasher'] in tests only",
    "PASSWORD_RESET_TIMEOUT=259200",
    "The secret: rotate the keys weekly and tell ops.",
    "Forgot password? Reset it via the admin page.",
    "DATABASE_URL=postgres://powercontext@localhost:5432/powercontext (peer auth, no password)",
    "git@github.com:example/powercontext.git and https://github.com/example/powercontext/pull/12",
    "http://localhost:8000/v1/memory/search?scope=team-a&limit=20",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "prompt tokens: 1234, completion tokens: 56",
    "tests/context_api/test_client.py::test_it_retries_on_a_503_with_retry_after",
    "test_MCP2Transport_v3_Retries failed on SQLite, passed on PostgreSQL 16.4.",
    "docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/pg -p 5432:5432 postgres:16",
    "In Python: dataclasses.replace(projection, truncated=True) returns a copy.",
    "The base64 of 'hello' is aGVsbG8= and of 'hi' is aGk=.",
    "getUserById2FromCacheLayer is slow; S3BucketPolicyGenerator2024 too.",
    "Bearer tokens are checked by context_api/auth.py before the operation runs.",
)
