"""Session recovery in the admin: sessions, notes, versions and note read audits are view-only
for everyone, superusers included; a note's text is not shown (operators read it through the
audited read) and what is shown is escaped."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Model
from django.urls import reverse

from powercontext.recovery import services
from powercontext.recovery.models import NoteReadAudit, RecoverySession, SessionNote, SessionNoteVersion

MODELS: list[type[Model]] = [RecoverySession, SessionNote, SessionNoteVersion, NoteReadAudit]
PAYLOAD = '<script>alert("pc")</script>'


def url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def note(db: None) -> None:
    services.note_write(scope_id="repo", session_id="s1", owner="local", path="plan.md", content=PAYLOAD)
    services.note_read_audited(
        scope_id="repo",
        session_id="s1",
        path="plan.md",
        version=None,
        reader="token:1",
        user=None,
        reason=PAYLOAD,
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_recovery_rows_are_view_only(admin_client: Any, note: None, model: type[Model]) -> None:
    obj = model._default_manager.get()
    count = model._default_manager.count()
    listing = admin_client.get(url(model, "changelist"))
    page = admin_client.get(url(model, "change", obj.pk))
    assert listing.status_code == 200 and page.status_code == 200
    assert b"<script>alert(" not in page.content
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.post(url(model, "change", obj.pk), {}).status_code == 403
    assert admin_client.post(url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    assert model._default_manager.count() == count


def test_a_version_page_does_not_show_the_note_text(admin_client: Any, note: None) -> None:
    version = SessionNoteVersion.objects.get()
    page = admin_client.get(url(SessionNoteVersion, "change", version.pk))
    assert page.status_code == 200 and b"alert(" not in page.content


def test_an_audit_page_shows_the_escaped_reason(admin_client: Any, note: None) -> None:
    audit = NoteReadAudit.objects.get()
    page = admin_client.get(url(NoteReadAudit, "change", audit.pk))
    assert b"&lt;script&gt;alert(" in page.content and b"token:1" in page.content
