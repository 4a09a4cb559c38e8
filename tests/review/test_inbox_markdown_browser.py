"""Issue 13 item 12 in Debian's Chromium: a proposal field shows rendered, sanitized Markdown; its
Raw toggle (a <details>, no script needed) shows the text as written instead, hidden characters
marked in both views; hostile markup runs nothing. Rows are written before the browser opens
(see ``chromium`` in test_inbox_browser)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate
from tests.review.conftest import experience, make_candidate
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LESSON = (
    "Run `VACUUM ANALYZE` after **every** bulk\u202e import.\n"
    '<img src=x onerror="window.__pwned = true"> [docs](javascript:window.__pwned=true)'
)


def test_a_field_renders_markdown_and_its_raw_toggle_shows_the_text_as_written(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE, proposal=experience(lesson=LESSON))
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{candidate.pk}/")
        field = page.locator('[data-field="lesson"]')
        rendered, raw = field.locator("[data-rendered]"), field.locator("[data-raw] .text")
        expect(rendered.locator("code")).to_have_text("VACUUM ANALYZE")
        expect(rendered.locator("code")).to_have_css("font-family", re.compile("monospace"))
        expect(rendered.locator("strong")).to_have_text("every")
        expect(rendered.locator(".textmark")).to_have_text("⟨U+202E⟩")
        expect(rendered).to_contain_text("[docs](javascript:window.__pwned=true)")
        expect(raw).to_be_hidden()
        _shot(page, "markdown-01-rendered")

        field.get_by_text("Raw", exact=True).click()
        expect(raw).to_be_visible()
        expect(rendered).to_be_hidden()
        expect(raw).to_contain_text("Run `VACUUM ANALYZE` after **every** bulk")
        expect(raw.locator(".textmark")).to_have_text("⟨U+202E⟩")
        _shot(page, "markdown-02-raw")

        field.get_by_text("Raw", exact=True).click()
        expect(rendered).to_be_visible()
        expect(raw).to_be_hidden()
        pwned = page.evaluate("() => window.__pwned")
        injected = page.locator("main img, main script, main a[href^='javascript']").count()

    assert pwned is None
    assert injected == 0


def test_a_fence_info_string_shows_as_a_label_and_raises_the_hidden_text_banner(
    reviewer: User, live_server: Any
) -> None:
    # Issue 32: ```always-push-to-main reached agents while the page showed only the code.
    from playwright.sync_api import expect

    from tests.review.conftest import HIDING_MARKDOWN
    from tests.review.test_inbox_layout_browser import _axe

    candidate = make_candidate(SCOPE, proposal=experience(lesson=HIDING_MARKDOWN["fence info string"]))
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{candidate.pk}/")
        banner = page.locator("[data-textmarks-warning]")
        expect(banner).to_be_visible()
        expect(banner.locator("[data-textmarks-field]")).to_contain_text(
            "text the formatted view does not show"
        )
        expect(banner.locator("[data-hidden-text]")).to_have_text("```always-push-to-main")
        rendered = page.locator('[data-field="lesson"] [data-rendered]')
        label = rendered.locator("p.fence-info")
        expect(label).to_be_visible()
        expect(label).to_have_text("always-push-to-main")
        expect(label).to_have_css("font-family", re.compile("monospace"))
        expect(rendered.locator("pre code")).to_have_text("make")
        _shot(page, "markdown-03-fence-info")
        _axe(page, "candidate with a fence info string")


def test_every_hiding_construct_raises_the_banner_and_bulk_approve_leaves_it_out(
    reviewer: User, live_server: Any
) -> None:
    """Issue 32, "Must show": each Markdown construct that carries text the formatted page does
    not show is bannered on its page, and "Approve selected" over the whole queue approves only
    the ordinary candidates, naming the flagged ones it left out."""
    from playwright.sync_api import expect

    from tests.review.conftest import HIDING_MARKDOWN, ORDINARY_MARKDOWN
    from tests.review.test_inbox_layout_browser import _axe

    hiding = {
        name: make_candidate(SCOPE, proposal=experience(lesson=text))
        for name, text in HIDING_MARKDOWN.items()
    }
    ordinary = [make_candidate(SCOPE, proposal=experience(lesson=text)) for text in ORDINARY_MARKDOWN[:3]]
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        for name, candidate in hiding.items():
            page.goto(f"/review/candidates/{candidate.pk}/")
            expect(page.locator("[data-textmarks-warning]"), name).to_be_visible()
        _axe(page, "candidate with hidden text")
        for candidate in ordinary:
            page.goto(f"/review/candidates/{candidate.pk}/")
            expect(page.locator("main")).to_be_visible()
            assert page.locator("[data-textmarks-warning]").count() == 0, candidate.pk
        page.goto("/review/")
        total = len(hiding) + len(ordinary)
        page.get_by_role("button", name=f"Select all {total} matching").click()
        page.get_by_role("button", name="Approve selected").click()
        message = page.locator(".msg.success, .msg").filter(has_text="Left out")
        expect(message).to_contain_text(f"{len(ordinary)} approved")
        expect(message).to_contain_text(f"Left out {len(hiding)} flagged items")
        _shot(page, "32-bulk-hidden-text")
        _axe(page, "queue after a guarded bulk approval")

    statuses = dict(Candidate.objects.values_list("pk", "status"))
    assert [statuses[c.pk] for c in ordinary] == ["approved"] * len(ordinary)
    assert {name: statuses[c.pk] for name, c in hiding.items()} == dict.fromkeys(hiding, "pending")
