"""Issue 13 items 7 and 13 in Debian's Chromium: axe-core finds no violations on the queue,
candidate, history and conflict pages; at 390 px the top bar fits, queue rows are cards and the
decision is one skip link away; single-key shortcuts can be turned off; j/k keep their place.

axe-core comes bundled with ``axe-playwright-python`` (requirements-dev.txt) and is injected
from the installed package: nothing is downloaded at test time. Rows are written before the
browser opens and checked after it closes (see ``chromium`` in test_inbox_browser).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate
from tests.review.conftest import approve, experience, make_candidate, make_source, result_ref, revise
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
LONG_SCOPE = "git:github.com/an-organisation-with-a-long-name/a-repository-with-an-even-longer-name"


def _axe(page: Any, name: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    assert results.violations_count == 0, f"{name}:\n{results.generate_report()}"


def _update_candidate(reviewer: User) -> Candidate:
    """A pending update (diff card), with a source and a cited revision as evidence."""
    base = approve(make_candidate(SCOPE, proposal=experience(lesson="Never deploy on Fridays.")), reviewer)
    ref = result_ref(base)
    return make_candidate(
        SCOPE,
        proposal=experience(lesson="Deploy on Fridays only with a second reviewer on call."),
        source_refs=[make_source(SCOPE, content="User: can we deploy today? It is Friday.\n" * 30)],
        artifact_refs=[ref],
        target=ref,
    )


def _fits(page: Any, selector: str = "html") -> bool:
    return bool(page.eval_on_selector(selector, "el => el.scrollWidth <= el.clientWidth"))


def test_axe_finds_no_violations_on_the_queue_candidate_history_and_conflict_pages(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    update = _update_candidate(reviewer)
    for n in range(3):
        make_candidate(LONG_SCOPE if n else SCOPE, proposal=experience(action="Deploy\u200b quietly."))
    revised = revise(make_candidate(SCOPE), reviewer, lesson="Batch big migrations, always.")
    approve(make_candidate(SCOPE), reviewer)

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        for viewport in (DESKTOP, PHONE):
            page.set_viewport_size(viewport)
            width = viewport["width"]
            page.goto("/review/")
            expect(page.locator("tr[data-queue-row]")).to_have_count(5)
            page.keyboard.press("j")  # the cursor row carries aria-current
            _axe(page, f"queue at {width}")
            page.goto("/review/?status=approved")
            _axe(page, f"approved list at {width}")
            page.goto("/review/?sort=bogus&family=nope")  # an invalid filter and a replaced sort
            expect(page.locator("#filter-errors")).to_be_visible()
            _axe(page, f"queue with errors at {width}")
            page.goto(f"/review/candidates/{update.pk}/")
            expect(page.locator("table.diff").first).to_be_visible()
            _axe(page, f"candidate at {width}")
            page.get_by_label("Reject reason").fill("   ")  # blank: the server ties an error to it
            page.get_by_role("button", name="Reject", exact=True).click()
            expect(page.locator("#reject-errors")).to_be_visible()
            _axe(page, f"candidate with a form error at {width}")
            page.goto(f"/review/candidates/{revised.pk}/history/")
            expect(page.locator("[data-history=version]")).to_have_count(2)
            _axe(page, f"history at {width}")

        # The conflict page: a second tab approves first.
        page.set_viewport_size(DESKTOP)
        page.goto(f"/review/candidates/{revised.pk}/")
        other = page.context.new_page()
        other.goto(f"/review/candidates/{revised.pk}/")
        other.get_by_role("button", name="Approve version 2").click()
        expect(other.locator("[data-result]")).to_be_visible()
        page.get_by_role("button", name="Approve version 2").click()
        expect(page.get_by_role("heading", name="This candidate was already approved")).to_be_visible()
        _axe(page, "conflict at 1440")
        page.set_viewport_size(PHONE)
        _axe(page, "conflict at 390")
        assert _fits(page)
        _shot(page, "13-conflict-390")


def test_at_390px_the_top_bar_fits_rows_are_cards_and_the_decision_is_one_link_away(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    update = _update_candidate(reviewer)
    for _ in range(3):
        make_candidate(LONG_SCOPE)

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        rows = page.locator("tr[data-queue-row]")
        expect(rows).to_have_count(4)
        # Desktop: one line per candidate, in a table.
        assert rows.first.evaluate("el => getComputedStyle(el).display") == "table-row"
        line_height = rows.first.bounding_box()["height"]
        assert line_height < 48, line_height
        _shot(page, "13-queue-1440")

        page.set_viewport_size(PHONE)
        page.goto("/review/")
        assert _fits(page), "the page scrolls sideways at 390 px"
        assert _fits(page, ".topbar"), "the top bar overflows at 390 px"
        topbar = page.locator(".topbar").bounding_box()
        for name in ("Pending", "Approved", "Rejected", "Log out"):
            role = "link" if name != "Log out" else "button"
            box = page.locator(".topbar").get_by_role(role, name=name, exact=True).bounding_box()
            assert 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], name
            assert box["y"] + box["height"] <= topbar["y"] + topbar["height"], name
        for n in range(4):
            row = rows.nth(n)
            assert row.evaluate("el => getComputedStyle(el).display") == "flex"  # a card, not a table row
            box = row.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
            assert box["height"] > line_height
        assert page.locator("table.queue thead").evaluate("el => getComputedStyle(el).display") == "none"
        _shot(page, "13-queue-390")

        page.goto(f"/review/candidates/{update.pk}/")
        assert _fits(page)
        approve_button = page.get_by_role("button", name="Approve version 1")
        skip = page.get_by_role("link", name="Skip to the decision")
        in_view = approve_button.evaluate("el => el.getBoundingClientRect().bottom <= window.innerHeight")
        if not in_view:
            expect(skip).to_be_in_viewport()
            evidence = page.locator("#evidence-title")
            assert skip.evaluate(
                "(el, other) => !!(el.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING)",
                evidence.element_handle(),
            )
            skip.click()
            expect(approve_button).to_be_in_viewport()
            expect(page.locator("#decide")).to_be_focused()
        _shot(page, "13-candidate-390")
        # On a fresh page the global skip link comes first and lands on the main content.
        page.goto(f"/review/candidates/{update.pk}/")
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name="Skip to main content")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("main")).to_be_focused()


def test_single_key_shortcuts_can_be_turned_off_and_stay_off(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    first, second = make_candidate(SCOPE), make_candidate(SCOPE)

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.keyboard.press("j")
        expect(page.locator("tr[data-queue-row].selected")).to_have_count(1)
        toggle = page.get_by_label("Single-key shortcuts")
        expect(toggle).to_be_checked()
        toggle.uncheck()
        page.reload()
        expect(page.get_by_label("Single-key shortcuts")).not_to_be_checked()
        page.locator("body").click(position={"x": 5, "y": 300})
        # The cursor comes back where it was (the first row); j, x and / now do nothing.
        selected = page.locator("tr[data-queue-row].selected")
        expect(selected).to_have_attribute("data-pk", str(first.pk))
        for key in ("j", "j", "x", "/"):
            page.keyboard.press(key)
        expect(selected).to_have_attribute("data-pk", str(first.pk))
        expect(page.locator("input[data-select]:checked")).to_have_count(0)
        expect(page.get_by_label("Text")).not_to_be_focused()
        expect(page.locator("[data-shortcut-hint]").first).to_be_hidden()

        page.goto(f"/review/candidates/{first.pk}/")
        for key in ("a", "r", "1", "n", "?"):
            page.keyboard.press(key)
        expect(page).to_have_url(f"{live_server.url}/review/candidates/{first.pk}/")
        expect(page.get_by_label("Reject reason")).to_have_value("")
        expect(page.locator("#help")).to_be_hidden()
        assert dialogs == []
        # The help is still one button away.
        page.get_by_role("button", name="Keyboard shortcuts").click()
        expect(page.locator("#help")).to_be_visible()

        page.get_by_label("Single-key shortcuts").check()
        page.keyboard.press("Escape")
        page.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("n")
        expect(page).to_have_url(f"{live_server.url}/review/candidates/{second.pk}/")
        stored = page.evaluate("() => localStorage.getItem('powercontext:shortcuts')")

    assert stored is None
    assert list(Candidate.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == [
        "pending",
        "pending",
    ]


def test_coming_back_to_the_queue_keeps_the_j_k_position(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    made = [make_candidate(scope) for scope in ("c", "a", "b", "a")]

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto("/review/?sort=scope")
        for _ in range(3):
            page.keyboard.press("j")
        # Scope order: a(#2), a(#4), b(#3), c(#1); the third row is #3.
        expect(page.locator("tr[data-queue-row].selected")).to_have_attribute("data-pk", str(made[2].pk))
        page.keyboard.press("o")
        expect(page.locator("[data-position]")).to_have_text("3 of 4")
        page.keyboard.press("n")
        expect(page).to_have_url(f"{live_server.url}/review/candidates/{made[0].pk}/?sort=scope")
        expect(page.locator("[data-position]")).to_have_text("4 of 4")
        page.keyboard.press("u")
        selected = page.locator("tr[data-queue-row].selected")
        expect(selected).to_have_attribute("data-pk", str(made[0].pk))
        expect(selected).to_have_attribute("aria-current", "true")
        page.keyboard.press("k")
        expect(page.locator("tr[data-queue-row].selected")).to_have_attribute("data-pk", str(made[2].pk))
        # A reload of the same list keeps the place too.
        page.goto("/review/?sort=scope")
        expect(page.locator("tr[data-queue-row].selected")).to_have_attribute("data-pk", str(made[2].pk))
