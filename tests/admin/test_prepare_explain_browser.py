"""The admin page "Explain a prepare" in Debian's headless Chromium (Playwright, live server).

Runs in the PostgreSQL pass, like every ``browser`` test. Rows are written before the browser
opens and nothing is read from the database inside it (see ``tests/review/test_inbox_browser``).
"""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.memory.services import memory_remember
from tests.review.test_inbox_browser import HOSTILE, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "explain-browser-pw"


def test_an_operator_explains_a_prepare_from_the_admin_index(
    django_user_model: Any, live_server: Any
) -> None:
    from playwright.sync_api import expect

    django_user_model.objects.create_superuser(username="operator", password=PASSWORD)
    memory_remember(
        scope_id="ops", kind="note", text="deploy on tuesdays only", reason=None, expected_revision=None
    )
    memory_remember(
        scope_id="ops", kind="note", text=f"deploy notes {HOSTILE}", reason=None, expected_revision=None
    )

    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1440, "height": 900}, base_url=live_server.url)
        page = context.new_page()
        page.goto("/admin/")
        page.get_by_label("Username").fill("operator")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("link", name="Explain a prepare").click()
        expect(page.get_by_role("heading", name="Explain a prepare")).to_be_visible()
        expect(page.get_by_label("Show text")).not_to_be_checked()

        page.get_by_label("Scope").fill("ops")
        page.get_by_label("Query").fill("deploy")
        page.get_by_label("Max bytes").fill("100")
        page.get_by_role("button", name="Explain").click()
        expect(page.locator(".errorlist")).to_contain_text("greater than or equal to 512")

        page.get_by_label("Max bytes").fill("8000")
        page.get_by_label("Show text").check()
        page.get_by_role("button", name="Explain").click()
        rows = page.locator("#explain-candidates tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator("#admitted-count")).to_have_text("2")
        expect(page.locator("#budget-used")).to_contain_text("of 8000 bytes")
        expect(rows.filter(has_text="deploy notes <script>")).to_have_count(1)  # shown as text
        assert page.evaluate("window.__pwned === undefined")
        _shot(page, "admin-explain-prepare")
