"""SECRET_KEY: required in service mode, generated once per data directory in the embedded default."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hardening.processes import PRINT_SECRET_KEY, child_env, run_manage, run_python

# Settings never connect: a URL that points nowhere is enough to select service mode.
SERVICE_DATABASE = {"DATABASE_URL": "postgres://powercontext:unused@127.0.0.1:9/unused"}
SERVICE_BROKER = {"CELERY_BROKER_URL": "redis://127.0.0.1:9/0"}
OLD_PUBLIC_KEY = "powercontext-local-insecure-key-set-SECRET_KEY-in-service-mode"
A_KEY = "k" * 20 + "-a-configured-secret-key-for-this-test-0123456789"


def refused(result: object) -> str:
    assert result.returncode != 0, result.stdout  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert "ImproperlyConfigured" in stderr
    return stderr


@pytest.mark.parametrize("service", [SERVICE_DATABASE, SERVICE_BROKER], ids=["postgres", "broker"])
def test_service_mode_without_a_secret_key_refuses_to_start(tmp_path: Path, service: dict[str, str]) -> None:
    stderr = refused(run_python(PRINT_SECRET_KEY, child_env(tmp_path, **service)))

    assert "SECRET_KEY is not set" in stderr and "SECRET_KEY_FILE" in stderr
    assert OLD_PUBLIC_KEY not in stderr
    assert not (tmp_path / "secret_key").exists()


def test_a_blank_secret_key_counts_as_unset(tmp_path: Path) -> None:
    refused(run_python(PRINT_SECRET_KEY, child_env(tmp_path, SECRET_KEY="  ", **SERVICE_DATABASE)))


def test_check_deploy_fails_for_a_service_without_a_secret_key(tmp_path: Path) -> None:
    result = run_manage("check", "--deploy", env=child_env(tmp_path, **SERVICE_DATABASE))

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@pytest.mark.parametrize("service", [SERVICE_DATABASE, SERVICE_BROKER], ids=["postgres", "broker"])
def test_service_mode_uses_the_configured_secret_key(tmp_path: Path, service: dict[str, str]) -> None:
    result = run_python(PRINT_SECRET_KEY, child_env(tmp_path, SECRET_KEY=A_KEY, **service))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == A_KEY
    assert not (tmp_path / "secret_key").exists()


def test_the_secret_key_can_come_from_a_file(tmp_path: Path) -> None:
    key_file = tmp_path / "mounted-secret"
    key_file.write_text(A_KEY + "\n", encoding="utf-8")

    result = run_python(
        PRINT_SECRET_KEY, child_env(tmp_path, SECRET_KEY_FILE=str(key_file), **SERVICE_DATABASE)
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == A_KEY


@pytest.mark.parametrize("content", [None, "", " \n"], ids=["missing", "empty", "blank"])
def test_an_unusable_secret_key_file_refuses_to_start(tmp_path: Path, content: str | None) -> None:
    key_file = tmp_path / "mounted-secret"
    if content is not None:
        key_file.write_text(content, encoding="utf-8")

    stderr = refused(run_python(PRINT_SECRET_KEY, child_env(tmp_path, SECRET_KEY_FILE=str(key_file))))

    assert "SECRET_KEY_FILE" in stderr


def test_secret_key_and_secret_key_file_together_are_ambiguous(tmp_path: Path) -> None:
    key_file = tmp_path / "mounted-secret"
    key_file.write_text(A_KEY, encoding="utf-8")

    stderr = refused(
        run_python(PRINT_SECRET_KEY, child_env(tmp_path, SECRET_KEY=A_KEY, SECRET_KEY_FILE=str(key_file)))
    )

    assert "only one" in stderr


def test_the_embedded_default_generates_a_private_key_once_and_reuses_it(tmp_path: Path) -> None:
    first = run_python(PRINT_SECRET_KEY, child_env(tmp_path))
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    key_file = tmp_path / "secret_key"

    assert key != OLD_PUBLIC_KEY
    assert len(key) >= 50 and len(set(key)) >= 5  # what check --deploy (security.W009) asks for
    assert key_file.read_text(encoding="utf-8").strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    second = run_python(PRINT_SECRET_KEY, child_env(tmp_path))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == key
    assert [p.name for p in tmp_path.iterdir() if "secret" in p.name] == ["secret_key"]


def test_each_data_directory_gets_its_own_key(tmp_path: Path) -> None:
    one = run_python(PRINT_SECRET_KEY, child_env(tmp_path / "one"))
    two = run_python(PRINT_SECRET_KEY, child_env(tmp_path / "two"))

    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)
    assert one.stdout.strip() != two.stdout.strip()


def test_an_unwritable_data_directory_refuses_to_start_with_advice(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("", encoding="utf-8")

    sqlite_elsewhere = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}

    stderr = refused(run_python(PRINT_SECRET_KEY, child_env(blocker / "data", **sqlite_elsewhere)))

    assert "Cannot store a generated secret key" in stderr and "SECRET_KEY_FILE" in stderr


def test_debug_service_mode_without_a_key_uses_the_local_generated_key(tmp_path: Path) -> None:
    result = run_python(PRINT_SECRET_KEY, child_env(tmp_path, DEBUG="true", **SERVICE_DATABASE))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (tmp_path / "secret_key").read_text(encoding="utf-8").strip()


def test_two_first_starts_racing_agree_on_one_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from powercontext import settings as project_settings

    key_file = tmp_path / "secret_key"
    real_link = os.link

    def another_process_wins(source: str, target: str) -> None:
        # The other process links its complete key file in just before this one does.
        key_file.write_text("the-key-the-other-process-wrote-" + "x" * 40 + "\n", encoding="utf-8")
        real_link(source, target)

    monkeypatch.setattr(os, "link", another_process_wins)

    key = project_settings.generated_secret_key(key_file)

    assert key == "the-key-the-other-process-wrote-" + "x" * 40
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no temporary file is left behind
