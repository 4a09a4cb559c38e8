"""The shapes added for issue 33: provider prefixes, .netrc, .pgpass, cookies, passphrases, hex
private keys, Discord webhooks, and the near misses each must leave alone.

Every secret below is fake, assembled from pieces so that no line holds a whole provider token.
"""

from __future__ import annotations

import time

import pytest

from powercontext.core.redaction import Redacted
from powercontext.core.redaction_detectors import DETECTORS, redact
from powercontext.core.secret_patterns import (
    COOKIE,
    DISCORD_WEBHOOK,
    HEX_PRIVATE_KEY,
    NETRC_PASSWORD,
    PGPASS_LINE,
    PROVIDER_TOKENS,
)
from powercontext.core.secret_phrases import HighEntropyDetector, KeywordAssignmentDetector
from powercontext.evaluation.secret_corpus import ADVERSARIAL_UNITS

HEX40 = "3f9a1c07be52d84e6f10a9c3d7b2e5f8041a6c9e"
HEX64 = HEX40 + "b7d2e0f4a8c3915d6e2b7f04"
MIXED = "Qm7xT2vLp9RkW4zN8sYc3HjD6gFb1AeU5oKi0"  # 37 mixed-case characters

SHAPES = [
    ("huggingface_token", "h" + "f_" + "QmxTvLpRkWzNsYcHjDgFbAeUoKiPqRsTuV", "HF_TOKEN={}"),
    ("huggingface_token", "h" + "f_" + "QmxTvLpRkWzNsYcHjDgFbAeUoKiPqRsTuV", "I pasted {} into the notebook"),
    ("digitalocean_token", "do" + "p_v1_" + HEX64, "doctl auth init -t {}"),
    ("shopify_token", "sh" + "pat_" + HEX40[:32], "the admin app token is {}"),
    ("stripe_webhook_secret", "wh" + "sec_" + MIXED[:32], "signing secret {} (^C to quit)"),
    ("google_api_key", "AI" + "za" + MIXED[:35], "https://maps.example.com/api/js?key={}&v=3"),
    ("google_oauth_secret", "GOC" + "SPX-" + MIXED[:28], "client secret {} leaked"),
    ("azure_client_secret", "Xy7" + "8Q~" + "aB3.dE5_fG7-hI9~jK1lM3nO5pQ7rS9tU", "az login -p {} --tenant t"),
    ("vault_token", "hv" + "s." + MIXED + "AbCd", "vault login {}"),
    ("age_secret_key", "AGE-SECRET" + "-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58], "{}"),
    ("linear_key", "lin" + "_api_" + MIXED + "abc", "use {} for the sync"),
    ("notion_token", "nt" + "n_" + MIXED + "abcdefghi", "integration secret {}"),
    ("postman_key", "PM" + "AK-" + HEX40[:24] + "-" + HEX64[:34], "--postman-api-key {}"),
    ("newrelic_key", "NR" + "AK-" + "ZSHS8WAH9FH74BYF6GT699YV9R4", "the user key {} is in the runbook"),
    ("grafana_token", "gl" + "sa_" + MIXED[:32] + "_" + HEX40[:8], "token {}"),
    ("databricks_token", "da" + "pi" + HEX40[:32], "databricks configure --token {}"),
    ("supabase_token", "sb" + "p_" + HEX40, "supabase login --token {}"),
    ("doppler_token", "dp" + ".st." + "prd." + MIXED + "abcdef", "doppler run --token {} -- ./start"),
    ("pulumi_token", "pu" + "l-" + HEX40, "pulumi login with {}"),
    ("groq_key", "gs" + "k_" + MIXED + "abcdefghijklmno", "key {}"),
    ("replicate_token", "r8" + "_" + MIXED, "export it as {} first"),
    ("sentry_token", "sntr" + "ys_" + MIXED + MIXED, "sentry-cli --auth-token {} releases"),
    ("terraform_token", "AbCdEf12345678" + ".atlas" + "v1." + MIXED + MIXED, "token {}"),
    ("mailgun_key", "ke" + "y-" + HEX40[:32], "--user 'api:{}'"),
    ("anthropic_key", "sk" + "-ant-api03-" + MIXED * 3, "x: {}"),
]


@pytest.mark.parametrize(
    ("kind", "secret", "template"), SHAPES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SHAPES)]
)
def test_a_provider_token_goes_whole_under_its_own_name(kind: str, secret: str, template: str) -> None:
    text = template.format(secret)

    result = redact(text)

    assert result.text == text.replace(secret, f"[REDACTED:{kind}]")
    assert result.findings == (kind,)


def test_a_discord_webhook_keeps_its_id_and_loses_its_token() -> None:
    token = "Ab3_" + "x" * 30 + "Yz9-" + "q" * 30
    text = f"notify https://discord.com/api/webhooks/123456789012345678/{token} on green"

    hits = list(DISCORD_WEBHOOK.find(text))

    assert [text[h.start : h.end] for h in hits] == [token]
    assert token not in redact(text).text


def test_a_hex_private_key_named_as_one_goes() -> None:
    for text in (f"wallet private key 0x{HEX64}", f"PRIVATE_KEY={HEX64}", f"the private key is {HEX64}."):
        assert HEX64 not in redact(text).text, text
    assert list(HEX_PRIVATE_KEY.find(f"private key sha256 fingerprint {HEX64}")) == []


NETRC = [
    ("machine api.example.com login deploy password Zq8-fake-Pw", "Zq8-fake-Pw"),
    ("machine github.com\n  login octo-bot\n  password Zq8-fake-Pw\n", "Zq8-fake-Pw"),
    ("default login anonymous password Zq8-fake-Pw", "Zq8-fake-Pw"),
    ("machine h port 2121 account a login u password Zq8-fake-Pw", "Zq8-fake-Pw"),
]


@pytest.mark.parametrize(("text", "secret"), NETRC)
def test_a_netrc_password_goes_and_the_entry_stays(text: str, secret: str) -> None:
    result = redact(text)

    assert result.text == text.replace(secret, "[REDACTED:netrc_password]")


def test_a_netrc_entry_split_by_a_window_border_is_still_found() -> None:
    text = "filler line\n" * 170 + "machine api.heroku.com\n  login ops@example.com\n  password Zq8-fake-Pw\n"

    assert [h.type for h in NETRC_PASSWORD.find(text)] == ["netrc_password"]
    assert "Zq8-fake-Pw" not in redact(text).text


PGPASS = [
    "db.internal:5432:app:app_user:Zq8-fake-Pw",
    "*:*:*:postgres:Zq8-fake-Pw",
    "  localhost:5432:warehouse:report:Zq8-fake-Pw  ",
    "[::1]:5432:*:*:Zq8-fake-Pw",
]


@pytest.mark.parametrize("text", PGPASS)
def test_a_pgpass_password_goes_and_the_fields_before_it_stay(text: str) -> None:
    result = redact(text)

    assert result.text == text.replace("Zq8-fake-Pw", "[REDACTED:pgpass_password]")


COOKIES = [
    ("Cookie: sessionid=k3j4h5g6f7d8s9a0; csrftoken=abc", ["k3j4h5g6f7d8s9a0"]),
    ("cookie: _app_session=AbcdefGhijklMnop; theme=dark; uid=9f8e7d6c5b", ["AbcdefGhijklMnop", "9f8e7d6c5b"]),
    (
        "Set-Cookie: session=eyfake0value0here; Path=/; HttpOnly; Expires=Wed, 21 Oct 2026 07:28:00 GMT",
        ["eyfake0value0here"],
    ),
    ("curl -b 'session=k3j4h5g6f7d8s9a0' https://app.example.com/me", ["k3j4h5g6f7d8s9a0"]),
    ("curl --cookie sid=k3j4h5g6f7d8s9a0 https://app.example.com/me", ["k3j4h5g6f7d8s9a0"]),
]


@pytest.mark.parametrize(("text", "values"), COOKIES)
def test_cookie_values_go_and_their_names_and_attributes_stay(text: str, values: list[str]) -> None:
    hits = list(COOKIE.find(text))

    assert [text[h.start : h.end] for h in hits] == values


PASSPHRASES = [
    "password: correct horse battery staple",
    "passphrase: willow cobalt pickle lantern",
    "WIFI_PASSPHRASE=orbit quartz staple tundra",
    "  db_password: velvet maple harbor\n  host: db",
]


@pytest.mark.parametrize("text", PASSPHRASES)
def test_a_passphrase_of_plain_words_goes_whole(text: str) -> None:
    phrase = text.split(":", 1)[1] if ":" in text.split("\n")[0] else text.split("=", 1)[1]
    phrase = phrase.split("\n")[0].strip()

    result = redact(text)

    assert not any(word in result.text for word in phrase.split())
    assert result.findings == ("secret_keyword",)


def test_a_django_secret_key_with_brackets_goes() -> None:
    value = "django-insecure-" + "8l#m+e#_c90cx%&-uapv67@(*mr=5!2h4^*1grt$c@$1ku)h@n"

    assert value[16:] not in redact(f"SECRET_KEY = '{value}'").text
    assert redact("SECRET_KEY = 'get_secret(\"django\")'").findings == ()


NEAR_MISSES = [
    # prefixes as words or names
    "HF_TOKEN is read from the environment",
    "see the hf_hub_download docs",
    "dop_v1 is the DigitalOcean prefix",
    "the key-value store keeps 32 entries",
    "secret_key_base_for_development_only",
    "shopify_app_session_storage = SQLiteSessionStorage()",
    # .netrc words in prose
    "the machine login prompt asks for a password",
    "machine learning models need a login and a password manager",
    "machine h login u password",
    # colon-separated fields that are not .pgpass
    "12:30:45 INFO worker started",
    "fe80:1:2:3:abcd",
    "aa:bb:cc:dd:ee:ff",
    "host:5432:app:user:12345",
    # cookies without a secret
    "Cookie: theme=dark; lang=en",
    "Set-Cookie: lang=en; Path=/; Max-Age=31536000",
    "the session cookie: expires after two weeks",
    # password prose
    "password: reset it in the account settings page",
    "password: must be at least twelve characters",
    "password: stored in the team vault",
    "Password: Correct Horse Battery Staple Example",
    "password: two words",
    # public data that looks random
    '"integrity": "sha512-'
    + "Zk3Lp9QwE2rT5yU8iO1aS4dF7gH0jK3lZx6cV9bN2mQ5wE8rT1yU4iO7pA0sD3fG6hJ9kL2zX5cV8bN1mQ4w"
    + '=="',
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    "private key sha256 fingerprint " + HEX64,
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_survive_unchanged(text: str) -> None:
    assert redact(text) == Redacted(text, ())


_KEYWORD = next(d for d in DETECTORS if isinstance(d, KeywordAssignmentDetector))
_ENTROPY = next(d for d in DETECTORS if isinstance(d, HighEntropyDetector))
NEW_DETECTORS = (
    PROVIDER_TOKENS,
    DISCORD_WEBHOOK,
    HEX_PRIVATE_KEY,
    PGPASS_LINE,
    NETRC_PASSWORD,
    COOKIE,
    _KEYWORD,
    _ENTROPY,
)


def _cpu_seconds(text: str) -> float:
    """The least CPU time of three runs of every new detector over ``text``, unwindowed."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for detector in NEW_DETECTORS:
            list(detector.find(text))
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("unit", ADVERSARIAL_UNITS)
def test_the_new_detectors_stay_linear_on_their_own_prefixes_repeated(unit: str) -> None:
    # Unwindowed on purpose: linear in the detector itself, not only thanks to redact's windows.
    # Four times the text may take at most eight times the CPU time (quadratic would be 16).
    small = (unit * (8_000 // len(unit) + 1))[:8_000]
    large = (unit * (32_000 // len(unit) + 1))[:32_000]

    assert _cpu_seconds(large) <= 8 * _cpu_seconds(small) + 0.02
