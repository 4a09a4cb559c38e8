"""Passwords and log-in throttling (imported by the settings package; docs/operators.md
"Passwords" and "Log-in throttling")."""

from __future__ import annotations

from datetime import timedelta

from powercontext.settings.env import env_int

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# New passwords are hashed with Argon2id (argon2-cffi; Django's defaults: 2 passes over 100 MiB,
# 8 lanes), about 0.1 s per check instead of 0.2-0.35 s for PBKDF2 at 1,000,000 iterations, and
# memory-hard. The hashers after it still verify older hashes; a successful log-in rewrites such a
# hash as Argon2 (Django upgrades to the first hasher). docs/operators.md "Passwords".
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]

# Log-in throttling (django-axes).
# Failed log-ins at /accounts/login/ and /admin/login/ are counted per username and, separately,
# per client address, in the database (shared by every app server). At the limit, log-ins for
# that username or from that address are refused, even with the right password, until the
# cool-off has passed since the failure that locked; refused attempts do not extend it.
# Operators lift a lock with `manage.py axes_reset_username <name>` / `axes_reset_ip <address>`.
# Django's authenticate() then needs the request: tests log in with force_login, not login().
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("POWERCONTEXT_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("POWERCONTEXT_LOGIN_COOLOFF_SECONDS", 900, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Behind N reverse proxies, the client address is the Nth entry from the end of X-Forwarded-For.
POWERCONTEXT_TRUSTED_PROXY_COUNT = env_int("POWERCONTEXT_TRUSTED_PROXY_COUNT", 0)
AXES_CLIENT_IP_CALLABLE = "powercontext.core.login_throttle.client_ip"
AXES_LOCKOUT_CALLABLE = "powercontext.core.login_throttle.lockout_response"
# No per-login history (address, user agent) beyond the failure counters themselves.
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False
