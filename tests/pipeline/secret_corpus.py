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

# --- More shapes (issue 20, N4): names with a keyword inside, command lines, prose, hex and UUIDs
# next to key-like names, invisible characters inside tokens, and more providers. ----------------

_HEX32 = "0f1e2d3c4b5a6978" + "8796a5b4c3d2e1f0"
_UUID = "9b2c4d6e-1f3a-4b5c-" + "8d7e-6f5a4b3c2d1e"
_ZW = "\u200b"
_GITLAB = "gl" + "pat-" + "FAKE0test0EXAMPLE0ab"
_STRIPE = "sk" + "_live_" + "FAKE0000test0000EXAMPLE0"
_STRIPE_RESTRICTED = "rk" + "_live_" + "TEST1111fake1111EXAMPLE1"
_SENDGRID = "SG" + "." + "FAKEfakeFAKEfake012345" + "." + "TESTtestTESTtest0123456789EXAMPLEexample012"
_OPENAI_PROJECT = "sk-" + "proj-" + "FAKE0test0EXAMPLE0value0abcdEFGH1234"
_TWILIO = "SK" + "0123456789abcdef" + "0123456789abcdef"
_MAILCHIMP = "0123456789abcdef" + "fedcba9876543210" + "-us12"
_PYPI = (
    "pypi-" + "AgEIcHlwaS5vcmc" + "CJDFAKE0test0EXAMPLE0value0abcdEFGH1234fake" + "0test0EXAMPLE0value" * 2
)
_TELEGRAM = "123456789" + ":AA" + "FAKEfake0test0EXAMPLEexample0abcd"
_SQUARE = "sq0csp-" + "FAKE0test0EXAMPLE0value0abcdEFGH1234567890a"
_AZURE = "AccountKey=" + "FAKE" + "0test0EXAMPLE0" * 5 + "abcdEFGH12=="
_NPM = "npm_" + "FAKE0test0EXAMPLE0value0abcdEFGH1234"


def _c(name: str, secret_type: str, secret: str, text: str) -> Case:
    return Case(name, secret_type, secret, text)


MORE: tuple[Case, ...] = (
    # Keyword inside a longer name.
    _c("PGPASSWORD", "secret_keyword", "Fk9-pg-Example-22", "PGPASSWORD=Fk9-pg-Example-22 psql -h db -U app"),
    _c("exported PGPASSWORD", "secret_keyword", "fakePgPw#2024", "export PGPASSWORD='fakePgPw#2024'"),
    _c("MYSQL_PWD", "secret_keyword", "FakeMy5qlPw!", "MYSQL_PWD=FakeMy5qlPw! mysql -u app"),
    _c("DB_PASS", "secret_keyword", "FakeDbPass77", "DB_PASS=FakeDbPass77"),
    _c("LDAP bind pw", "secret_keyword", "FakeLdap#1", "LDAP_BIND_PW=FakeLdap#1"),
    _c("SMTP password", "secret_keyword", "FakeSmtp2024", "SMTP_PASSWORD=FakeSmtp2024"),
    _c(
        "vault password",
        "secret_keyword",
        "FakeVault2024",
        "ANSIBLE_VAULT_PASSWORD=FakeVault2024 ansible-playbook x.yml",
    ),
    _c("spring property", "secret_keyword", "FakeSpring9", "spring.datasource.password=FakeSpring9"),
    _c(
        "helm set",
        "secret_keyword",
        "FakeHelmPw3",
        "helm install db bitnami/postgresql --set auth.password=FakeHelmPw3",
    ),
    _c(
        "kubectl literal",
        "secret_keyword",
        "FakeK8sPw1",
        "kubectl create secret generic db --from-literal=password=FakeK8sPw1",
    ),
    _c(
        "sql server connection string",
        "secret_keyword",
        "FakeSql#2022",
        "Server=db;User Id=sa;Password=FakeSql#2022;TrustServerCertificate=true",
    ),
    _c(
        "yaml password",
        "secret_keyword",
        "FakeYaml#Pw1",
        "database:\n  user: app\n  password: FakeYaml#Pw1\n",
    ),
    _c(
        "json client secret",
        "secret_keyword",
        "FAKE-client-secret-0001",
        '{"client_secret": "FAKE-client-secret-0001"}',
    ),
    _c("camelCase api key", "secret_keyword", "FAKEapiKEY12345678", '{"apiKey": "FAKEapiKEY12345678"}'),
    _c("passphrase", "secret_keyword", "Fake passphrase 42", 'passphrase: "Fake passphrase 42"'),
    _c("ssh passphrase", "secret_keyword", "FakeSshPhrase#1", "ssh_passphrase = FakeSshPhrase#1"),
    _c(
        "django secret key",
        "secret_keyword",
        "django-insecure-FAKE0test0value",
        "SECRET_KEY=django-insecure-FAKE0test0value",
    ),
    _c("session secret", "secret_keyword", "FakeSessionSecret!", "session_secret: FakeSessionSecret!"),
    _c(
        "api token env",
        "secret_keyword",
        "FAKEtoken0000example",
        "heroku config:set API_TOKEN=FAKEtoken0000example",
    ),
    _c(
        "refresh token",
        "secret_keyword",
        "1//0gFAKE-refresh-token-value",
        "refresh_token=1//0gFAKE-refresh-token-value",
    ),
    _c("cli token flag", "secret_keyword", "FakeTok3n-Value", "deploy --token=FakeTok3n-Value --env prod"),
    _c("mysql password flag", "secret_keyword", "FakeMyCli1", "mysql --user=app --password=FakeMyCli1 app"),
    _c(
        "google api key",
        "google_api_key",
        "AIza" + "FAKE0test0EXAMPLE0value0abcdEFGH123",
        "GOOGLE_API_KEY=AIzaFAKE0test0EXAMPLE0value0abcdEFGH123",
    ),
    _c("slack signing secret", "secret_keyword", _HEX32, f"SLACK_SIGNING_SECRET={_HEX32}"),
    _c(
        "webhook secret", "secret_keyword", "whsec_FAKE0test0value", 'webhook_secret: "whsec_FAKE0test0value"'
    ),
    _c(
        "encryption key",
        "secret_keyword",
        "base64:FAKEkey0test0EXAMPLE0value=",
        "ENCRYPTION_KEY=base64:FAKEkey0test0EXAMPLE0value=",
    ),
    _c("GH_TOKEN bare", "secret_keyword", "FAKE0classic0value0", "GH_TOKEN=FAKE0classic0value0"),
    # Hex and UUIDs next to key-like names.
    _c("deploy key hex", "secret_keyword", _HEX32, f"DEPLOY_KEY={_HEX32}"),
    _c("heroku api key uuid", "secret_keyword", _UUID, f"HEROKU_API_KEY={_UUID}"),
    _c("x-api-key header uuid", "secret_keyword", _UUID, f"X-Api-Key: {_UUID}"),
    _c("curl api key header", "secret_keyword", _HEX32, f'curl -H "X-API-KEY: {_HEX32}" https://api.test/v1'),
    _c("token uuid in yaml", "secret_keyword", _UUID, f"auth:\n  token: {_UUID}\n"),
    _c("datadog key", "secret_keyword", _HEX32, f"DATADOG_API_KEY={_HEX32}"),
    _c("API key prose hex", "secret_prose", _HEX32, f"API key: {_HEX32} (staging only)"),
    _c("license key uuid", "secret_prose", _UUID.upper(), f"the license key is {_UUID.upper()}."),
    _c("api token prose hex", "secret_prose", _HEX32, f"the api token for staging was {_HEX32}"),
    # Command lines.
    _c("mysql -p glued", "cli_password", "FakeRootPw9", "mysql -u root -pFakeRootPw9 app"),
    _c("mysql -p quoted", "cli_password", "Fake Pw 77", "mysql -h db -u app -p'Fake Pw 77' app"),
    _c("mysqldump -p", "cli_password", "TestDump#1", "mysqldump -uroot -pTestDump#1 app > dump.sql"),
    _c("sshpass quoted", "cli_password", "FakeSsh!Pass3", "sshpass -p 'FakeSsh!Pass3' ssh deploy@host"),
    _c(
        "sshpass bare", "cli_password", "FakeSshPass44", "sshpass -p FakeSshPass44 scp build.tgz deploy@host:"
    ),
    _c(
        "docker login -p",
        "cli_password",
        "FakeDockerPw55",
        "docker login -u bot -p FakeDockerPw55 registry.example",
    ),
    _c(
        "docker login --password",
        "cli_password",
        "FakeRegistry#6",
        "docker login --password FakeRegistry#6 -u bot",
    ),
    _c("podman login", "cli_password", "FakePodman!7", "podman login -p 'FakePodman!7' quay.example"),
    _c("redis-cli -a", "cli_password", "FakeRedisAuth9", "redis-cli -h cache -a FakeRedisAuth9 ping"),
    _c("curl -u", "cli_password", "FakeCurlPw8", "curl -u admin:FakeCurlPw8 https://jenkins.example/api"),
    _c(
        "password flag with space",
        "cli_password",
        "FakeCliPw#5",
        "./migrate --db-password FakeCliPw#5 --dry-run",
    ),
    _c("api key flag with space", "cli_password", _HEX32, f"tool --api-key {_HEX32} sync"),
    # Prose.
    _c(
        "staging db password prose",
        "secret_prose",
        "FakeStaging#88",
        "the staging db password is FakeStaging#88",
    ),
    _c("prod password was", "secret_prose", "Tr0ub4dor&3fake", "The prod password was Tr0ub4dor&3fake."),
    _c("wifi password is now", "secret_prose", "FakeWifi2024", "office wifi password is now FakeWifi2024"),
    _c(
        "root password for a box",
        "secret_prose",
        "Fake@Root77",
        "the root password for the db01 box is Fake@Root77",
    ),
    _c("password for a service", "secret_prose", "FakeJenkins#3", "Password for jenkins: FakeJenkins#3"),
    _c(
        "password changed to",
        "secret_prose",
        "FakeChanged#4",
        "I changed the admin password changed to FakeChanged#4 today",
    ),
    # Invisible characters inside tokens.
    _c(
        "github token split by a zero-width space",
        "github_token",
        _GITHUB_CLASSIC[:12] + _ZW + _GITHUB_CLASSIC[12:],
        f"token: {_GITHUB_CLASSIC[:12]}{_ZW}{_GITHUB_CLASSIC[12:]}",
    ),
    _c(
        "aws key split by a word joiner",
        "aws_access_key",
        _AWS_ACCESS[:4] + "\u2060" + _AWS_ACCESS[4:],
        f"key {_AWS_ACCESS[:4]}\u2060{_AWS_ACCESS[4:]} in the log",
    ),
    _c(
        "password split by a soft hyphen",
        "secret_keyword",
        "Fake\u00adSoft9pw",
        "password: Fake\u00adSoft9pw",
    ),
    _c(
        "slack token with variation selectors",
        "slack_token",
        _SLACK_BOT[:6] + "\ufe0f" + _SLACK_BOT[6:],
        f"bot {_SLACK_BOT[:6]}\ufe0f{_SLACK_BOT[6:]} posted",
    ),
    _c(
        "openai key with a zero-width joiner",
        "openai_key",
        _OPENAI_PROJECT[:10] + "\u200d" + _OPENAI_PROJECT[10:],
        f"OPENAI={_OPENAI_PROJECT[:10]}\u200d{_OPENAI_PROJECT[10:]}",
    ),
    # URLs.
    _c("psql url", "url_password", "FakePsqlPw1", 'psql "postgresql://app:FakePsqlPw1@db/app"'),
    _c("amqp url", "url_password", "FakeAmqp#9", "BROKER=amqp://guest:FakeAmqp#9@rabbit:5672//"),
    _c(
        "mongodb srv url",
        "url_password",
        "FakeMongo2024",
        "mongodb+srv://admin:FakeMongo2024@cluster0.example.net/db",
    ),
    _c(
        "https url",
        "url_password",
        "FakeHttpPw7",
        "git remote add origin https://user:FakeHttpPw7@git.example.com/repo.git",
    ),
    _c("ftp url", "url_password", "FakeFtp99", "ftp://anon:FakeFtp99@ftp.example.org/pub"),
    _c(
        "gitlab token in url",
        "url_password",
        _GITLAB,
        f"git clone https://oauth2:{_GITLAB}@gitlab.example/x.git",
    ),
    # Providers.
    _c("gitlab token", "gitlab_token", _GITLAB, f"use {_GITLAB} for the registry"),
    _c("stripe live key", "stripe_key", _STRIPE, f"charge with {_STRIPE}"),
    _c("stripe restricted key", "stripe_key", _STRIPE_RESTRICTED, f"the webhook uses {_STRIPE_RESTRICTED}"),
    _c("sendgrid key", "sendgrid_key", _SENDGRID, f"mail via {_SENDGRID}"),
    _c("openai project key", "openai_key", _OPENAI_PROJECT, f"export OPENAI_API_KEY={_OPENAI_PROJECT}"),
    _c("twilio key", "twilio_key", _TWILIO, f"twilio sid {_TWILIO} is the api key"),
    _c("mailchimp key", "mailchimp_key", _MAILCHIMP, f"mailchimp {_MAILCHIMP} for the newsletter"),
    _c("pypi token", "pypi_token", _PYPI, f"twine upload -u __token__ dist/* with {_PYPI}"),
    _c("telegram bot token", "telegram_token", _TELEGRAM, f"bot token {_TELEGRAM}"),
    _c("square secret", "square_oauth_secret", _SQUARE, f"square {_SQUARE}"),
    _c("npm token", "npm_token", _NPM, f"//registry.npmjs.org/:_authToken={_NPM}"),
    _c("jwt in a cookie", "jwt", _JWT, f"Cookie: session={_JWT}; Path=/"),
    _c(
        "basic auth header",
        "bearer_token",
        "ZmFrZXVzZXI6ZmFrZXBhc3N3b3JkMTIz",
        "Authorization: Basic ZmFrZXVzZXI6ZmFrZXBhc3N3b3JkMTIz",
    ),
    _c("github token header", "github_token", _GITHUB_APP, f"Authorization: token {_GITHUB_APP}"),
    _c("aws secret exported", "aws_secret_key", _AWS_SECRET, f'export AWS_SECRET_ACCESS_KEY="{_AWS_SECRET}"'),
    _c(
        "aws credentials file",
        "aws_secret_key",
        _AWS_SECRET,
        f"[default]\naws_secret_access_key = {_AWS_SECRET}\n",
    ),
    _c(
        "private key in json",
        "private_key",
        _PEM_LINES[0],
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + _PEM_LINES[0]
        + "\\n"
        + _PEM_LINES[1]
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "bot@example.iam"}',
    ),
    _c(
        "high entropy in a log",
        "high_entropy_string",
        "Qm7Xk2Pz9Lw4Rt8Vn3Hc",
        "salt=Qm7Xk2Pz9Lw4Rt8Vn3Hc applied",
    ),
    _c(
        "high entropy nonce",
        "high_entropy_string",
        "aB3dE5fG7hJ9kL1mN3pQ5r",
        "nonce aB3dE5fG7hJ9kL1mN3pQ5r reused",
    ),
)
CORPUS = CORPUS + MORE

# Technical lines that mention secrets, flags and identifiers without holding one.
BENIGN = BENIGN + (
    "mysql -u root -p",
    "mysql -u root -p app < schema.sql",
    "docker run -p 8080:80 nginx:1.25",
    "ssh -p 2222 deploy@host.example",
    "mkdir -p build/out && cp -p a b",
    "docker login registry.example (it prompts for the password)",
    "sshpass -f ~/.ssh/pass.txt ssh deploy@host",
    "--password-file /run/secrets/db_password",
    "PASSWORD_MIN_LENGTH=12",
    "token_type: bearer",
    "max_tokens: 4096",
    "secret_name: prod-db-creds",
    "SECRET_KEY_FILE=/run/secrets/django_key",
    "password_validators: [length, common]",
    "The password reset link expires in 24 hours.",
    "The token budget is 8000 bytes per prepare.",
    "Each key: value pair becomes one setting.",
    "The primary key is the user id.",
    "The secret to fast tests is fewer fixtures.",
    "Password: see the vault entry for staging.",
    "the password is stored in the vault",
    "the token is refreshed every hour",
    "the api key is read from the environment",
    "the password is ${DB_PASSWORD}",
    "password: <your password here>",
    "password = getpass.getpass()",
    "token = request.headers.get('Authorization')",
    "api_key = settings.OPENAI_API_KEY",
    "secret = os.environ.get('SECRET')",
    "DB_PASSWORD=${DB_PASSWORD:-}",
    "AUTH_TOKEN_TTL=3600",
    "SESSION_COOKIE_AGE=1209600",
    "CSRF_COOKIE_NAME=csrftoken",
    "keyring set powercontext api",
    "git log --author=ops --since=2.weeks",
    "pytest -k test_token_scopes -x -q",
    "curl -u admin https://jenkins.example/api (prompts for a password)",
    "redis-cli -h cache -p 6379 ping",
    "ln -s ../shared/.env.example .env",
    "chmod 0600 ~/.pgpass",
    "The pgpass file format is hostname:port:database:username:password.",
    "kubectl get secret db -o jsonpath='{.data.password}'",
    "helm install db bitnami/postgresql --set auth.existingSecret=db-creds",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 moved the key loader",
    "Request 550e8400-e29b-41d4-a716-446655440000 took 120 ms.",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    'The ETag was W/"5e15153d-120f".',
    "docker pull ghcr.io/example/powercontext:2026.12.1",
    "pip install 'django>=5.1,<5.2' psycopg[binary]==3.2.3",
    "node_modules/.bin/eslint --fix src/",
    "SELECT id, scope_id FROM powercontext_memoryentry WHERE retired_at IS NULL;",
    "CREATE INDEX CONCURRENTLY memory_scope_idx ON memory (scope_id);",
    'ERROR: duplicate key value violates unique constraint "pipeline_job_session_unique"',
    "KeyError: 'scope_id' in context_api/operations/prepare.py line 88",
    "TypeError: expected str, got NoneType",
    'Traceback (most recent call last): File "manage.py", line 22',
    "ssh-keygen -t ed25519 -C ops@example",
    "-----BEGIN PUBLIC KEY----- is safe to share; the private key is not.",
    "openssl rand -hex 32 > secret.txt",
    "export DJANGO_SETTINGS_MODULE=powercontext.settings",
    "export POWERCONTEXT_REQUIRE_TOKEN=true",
    "Set POWERCONTEXT_OPENAI_API_KEY_FILE to the key file's path.",
    "The OAuth2 client id is public; the client secret is not.",
    "Use Authorization: Bearer <token> on every /v1 call.",
    "bearer tokens expire after 15 minutes",
    "token expired at 2026-12-01T10:00:00Z",
    "the API key header is X-Api-Key",
    "X-Request-Id: 0af7651916cd43dd8448eb211c80319c",
    "Content-Type: application/json; charset=utf-8",
    "Cache-Control: no-store, max-age=0",
    "sha1sum powercontext-2026.12.tar.gz",
    "md5: d41d8cd98f00b204e9800998ecf8427e",
    "version 3.11.7 (main, May  9 2026) [GCC 12.2.0]",
    "uvicorn powercontext.asgi:application --port 8000 --workers 2",
    "gunicorn -w 4 -b 0.0.0.0:8000 powercontext.wsgi",
    "The cache key is scope:team-a:search:v3.",
    "cache_key = f'{scope_id}:{revision}'",
    "sort_key=lambda item: item.score",
    "primary_key=True, editable=False",
    "KeyboardInterrupt during the migration; rerun it.",
    "pass the --dry-run flag first",
    "passenger_count: 4",
    "bypass: true",
    "compass heading 270 degrees",
    "Fixed: the password field now masks input.",
    "password123 is on every list of banned passwords.",
    "HTTP2ServerPushHandlerFactory and OAuth2AuthorizationCodeFlow again.",
    "v1.2.3-rc.1+build.2026.12.01",
    "The UUID namespace is 6ba7b810-9dad-11d1-80b4-00c04fd430c8.",
)

# Benign lines the redactor changes anyway, kept out of the strict test above and counted against
# its precision (tests/pipeline/test_redaction_quality.py): an SSH key fingerprint is base64 with
# the entropy of a token.
KNOWN_FALSE_POSITIVES: tuple[str, ...] = (
    "The RSA public key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
)
