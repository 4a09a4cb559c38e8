"""Issue 22 item 7 (density and mobile) in Debian's Chromium, on a realistic queue: long titles,
update badges, flags and long scope names that differ only in their ends.

- the bulk panel is not there until a row is selected, and then it never covers the cursor row;
- at least 15 rows are visible at 1440×900 and 8 at 1280×720;
- badges and the distinguishing end of a scope name are never cut;
- at 390×844 the first row is on the first screen, every tap target is at least 44 px, and no
  Inbox page scrolls sideways (queue, candidate, revise, history, conflict, audit, log-in, errors);
- axe-core still finds no violations on the reworked queue.

Rows are written before the browser opens (see ``chromium`` in test_inbox_browser).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate
from tests.review.conftest import (
    PASSWORD,
    approve,
    experience,
    make_candidate,
    make_update_candidate,
    reject,
    skill,
)
from tests.review.test_inbox_browser import _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
LAPTOP = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
# Scope names that look alike but for their ends, as in the issue ("payments" / "payments-ledger").
SCOPES = [
    "payments",
    "payments-ledger",
    "git:github.com/acme-corporation/payments-service",
    "git:github.com/acme-corporation/payments-service-ledger",
    "local:/srv/build-agents/nightly",
]
LONG_LESSON = (
    "Before rotating the staging TLS certificates, drain the load balancer pool and check that "
    "every health probe answers over the new chain, or the quarterly audit fails again ({n})."
)
LONG_SITUATION = (
    "The staging certificates expired during the quarterly audit and three services refused "
    "connections from the monitoring agents for most of an afternoon ({n})."
)


def seed_realistic_queue(reviewer: User, pending: int = 40) -> list[Candidate]:
    """``pending`` candidates over SCOPES: long titles and subtitles, every third one an update of
    an approved Experience, some stale, some with hidden characters, some Skills."""
    bases = [approve(make_candidate(scope), reviewer) for scope in SCOPES]
    moved = approve(make_candidate(SCOPES[1]), reviewer)
    stale = make_update_candidate(moved)
    approve(make_update_candidate(moved), reviewer)  # ``moved`` moved on: ``stale`` is stale
    made = [stale]
    for n in range(pending - 1):
        scope_index = n % len(SCOPES)
        if n % 7 == 3:
            made.append(make_candidate(SCOPES[scope_index], family="skill", proposal=skill()))
        elif n % 3 == 0:
            proposal = experience(lesson=LONG_LESSON.format(n=n), situation=LONG_SITUATION.format(n=n))
            made.append(make_update_candidate(bases[scope_index], proposal=proposal))
        else:
            lesson = LONG_LESSON.format(n=n) + (" Deploy\u200b quietly." if n % 11 == 5 else "")
            made.append(
                make_candidate(
                    SCOPES[scope_index],
                    proposal=experience(lesson=lesson, situation=LONG_SITUATION.format(n=n)),
                )
            )
    return made


def _rows_in_view(page: Any) -> int:
    """Queue rows wholly inside the viewport (not under the sticky top bar)."""
    return int(
        page.evaluate(
            """() => {
              const bar = document.querySelector('.topbar').getBoundingClientRect().bottom;
              return [...document.querySelectorAll('tr[data-queue-row]')].filter(row => {
                const box = row.getBoundingClientRect();
                return box.top >= bar && box.bottom <= window.innerHeight;
              }).length;
            }"""
        )
    )


# Controls smaller than 44 × 44 px (a link inside running text is exempt, as WCAG 2.5.5 says;
# skip links parked above the page until focused are not on screen).
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary')].filter(el => {
  const box = el.getBoundingClientRect();
  const style = getComputedStyle(el);
  if (!box.width || !box.height || style.visibility === 'hidden' || box.bottom <= 0) return false;
  if (el.tagName === 'A' && style.display === 'inline' && el.closest('p, li, dd, .msg, .md, .text')) return false;
  return box.width < 44 || box.height < 44;
}).map(el => `${el.tagName} "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 40)}"`
  + ` ${Math.round(el.getBoundingClientRect().width)}x${Math.round(el.getBoundingClientRect().height)}`)"""

# How far the page scrolls sideways, and what sticks out (for the failure message).
SIDEWAYS = """() => {
  const over = document.scrollingElement.scrollWidth - window.innerWidth;
  if (over <= 0) return 0;
  const wide = [...document.querySelectorAll('body *')]
    .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1)
    .slice(0, 6).map(el => `${el.tagName}.${el.className}#${el.id} ${Math.round(el.getBoundingClientRect().right)}`);
  return `${over} px: ${wide.join(', ')}`;
}"""


def _axe(page: Any, name: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    assert results.violations_count == 0, f"{name}:\n{results.generate_report()}"


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return box


def test_rows_fit_and_the_bulk_panel_appears_only_with_a_selection(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    seed_realistic_queue(reviewer)
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        rows = page.locator("tr[data-queue-row]")
        panel = page.get_by_role("group", name="Bulk actions")
        for viewport, wanted in ((DESKTOP, 15), (LAPTOP, 8)):
            page.set_viewport_size(viewport)
            page.goto("/review/")
            expect(rows).to_have_count(40)
            assert _rows_in_view(page) >= wanted, (viewport, _rows_in_view(page))
            # No selection: no panel, only the slim "Select all" line.
            for name in ("Approve selected", "Reject selected"):
                expect(page.get_by_role("button", name=name)).to_be_hidden()
            expect(page.locator("#bulk-reason")).to_be_hidden()
            expect(page.get_by_role("button", name="Select all 40 matching")).to_be_visible()
            assert _box(panel)["height"] < 40
        _shot(page, "22-queue-1280")

        page.set_viewport_size(DESKTOP)
        page.goto("/review/")
        before = _box(rows.nth(3))
        rows.nth(3).locator("input[data-select]").check()
        expect(page.get_by_role("button", name="Approve selected")).to_be_visible()
        expect(page.locator("[data-selected-count]")).to_have_text("1 selected")
        assert _box(rows.nth(3))["y"] == pytest.approx(before["y"], abs=1), "ticking a row moved the rows"
        sheet = _box(panel)
        assert sheet["y"] + sheet["height"] == pytest.approx(DESKTOP["height"], abs=1)
        assert sheet["height"] < 160, sheet
        _axe(page, "queue with the bulk panel at 1440")
        # j walks the cursor down the page: it is never under the panel or the top bar.
        for _ in range(25):
            page.keyboard.press("j")
            cursor = _box(page.locator("tr[data-queue-row].selected"))
            top_bar = _box(page.locator(".topbar"))
            sheet = _box(panel)
            assert cursor["y"] >= top_bar["y"] + top_bar["height"] - 1
            assert cursor["y"] + cursor["height"] <= sheet["y"] + 1, (cursor, sheet)
        _shot(page, "22-queue-bulk-1440")
        rows.nth(3).locator("input[data-select]").uncheck()
        expect(page.locator("input[data-select]:checked")).to_have_count(0)
        expect(page.get_by_role("button", name="Approve selected")).to_be_hidden()


def test_badges_and_the_end_of_scope_names_are_never_cut(reviewer: User, live_server: Any) -> None:
    seed_realistic_queue(reviewer)
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        for viewport in (LAPTOP, DESKTOP, PHONE):
            page.set_viewport_size(viewport)
            page.goto("/review/")
            cut = page.evaluate(
                """() => [...document.querySelectorAll(
                    'tr[data-queue-row] .badge, tr[data-queue-row] .flag, tr[data-queue-row] .scope-tail')]
                  .filter(el => {
                    // Within the cell's content box: text-overflow hides what crosses it.
                    const box = el.getBoundingClientRect();
                    const td = el.closest('td');
                    const style = getComputedStyle(td);
                    const cell = td.getBoundingClientRect();
                    const right = cell.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
                    const left = cell.left + parseFloat(style.paddingLeft) + parseFloat(style.borderLeftWidth);
                    const chip = el.closest('.scope-chip');
                    const outer = chip ? chip.getBoundingClientRect().right : right;
                    return el.scrollWidth > el.clientWidth + 1 || box.right > Math.min(right, outer) + 0.5
                      || box.left < left - 0.5;
                  }).map(el => el.closest('tr').dataset.pk + ': ' + el.textContent)"""
            )
            assert cut == [], (viewport, cut)
            chips = page.eval_on_selector_all(
                "tr[data-queue-row] .scope-chip",
                "chips => chips.map(c => [c.title, c.innerText.replace(/\\s+/g, '')])",
            )
            shown = {title: text for title, text in chips}
            assert set(shown) == set(SCOPES)
            # Every scope looks different from every other, and each shows its own end.
            assert len(set(shown.values())) == len(SCOPES), shown
            for title, text in shown.items():
                assert text.endswith(title[-16:]), (title, text)
        _shot(page, "22-queue-390")


def test_at_390px_the_first_row_is_on_screen_targets_are_44px_and_nothing_scrolls_sideways(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    made = seed_realistic_queue(reviewer, pending=12)
    update = next(c for c in made if c.latest.target and c.pk != made[0].pk)
    admin = User.objects.create_superuser("auditor", password=PASSWORD)
    decided = approve(make_candidate(SCOPES[3]), reviewer)
    decision_pk = decided.decision.pk
    with chromium() as browser:
        context = browser.new_context(viewport=PHONE, base_url=live_server.url)
        page = context.new_page()
        page.goto("/accounts/login/")
        assert page.evaluate(SIDEWAYS) == 0, "log-in"
        assert page.evaluate(SMALL_TARGETS) == [], "log-in"
        page.get_by_label("Username").fill("reviewer")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        rows = page.locator("tr[data-queue-row]")
        expect(rows).to_have_count(12)
        first = _box(rows.first)
        assert first["y"] >= 0 and first["y"] + first["height"] <= PHONE["height"], first
        assert page.evaluate(SMALL_TARGETS) == [], "queue"
        rows.first.locator("input[data-select]").check()
        expect(page.get_by_role("button", name="Approve selected")).to_be_visible()
        assert page.evaluate(SMALL_TARGETS) == [], "queue with a selection"
        assert page.evaluate(SIDEWAYS) == 0, "queue with a selection"
        _axe(page, "queue with the bulk panel at 390")
        _shot(page, "22-queue-bulk-390")

        pages = {
            "queue": "/review/",
            "approved": "/review/?status=approved",
            "candidate": f"/review/candidates/{update.pk}/",
            "decided candidate": f"/review/candidates/{decided.pk}/?status=approved",
            "revise": f"/review/candidates/{update.pk}/revise/",
            "history": f"/review/candidates/{update.pk}/history/",
            "missing candidate": "/review/candidates/999999/",
            "unknown page": "/review/nowhere/",
        }
        for name, path in pages.items():
            page.goto(path)
            assert page.evaluate(SIDEWAYS) == 0, name
            assert page.evaluate(SMALL_TARGETS) == [], name

        # The conflict page: another tab approves first.
        page.goto(f"/review/candidates/{update.pk}/")
        other = context.new_page()
        other.goto(f"/review/candidates/{update.pk}/")
        other.get_by_role("button", name=re.compile("^Approve version")).click()
        expect(other.locator("[data-result]")).to_be_visible()
        page.get_by_role("button", name=re.compile("^Approve version")).click()
        expect(page.get_by_role("heading", name="This candidate was already approved")).to_be_visible()
        assert page.evaluate(SIDEWAYS) == 0, "conflict"
        assert page.evaluate(SMALL_TARGETS) == [], "conflict"
        _shot(page, "22-conflict-390")

        # The decision audit (the admin's decision page), as an administrator.
        audit = browser.new_context(viewport=PHONE, base_url=live_server.url).new_page()
        audit.goto("/admin/login/")
        audit.get_by_label("Username").fill("auditor")
        audit.get_by_label("Password").fill(PASSWORD)
        audit.get_by_role("button", name="Log in").click()
        for name, path in (
            ("audit", f"/admin/review/reviewdecision/{decision_pk}/change/"),
            ("audit list", "/admin/review/reviewdecision/"),
        ):
            response = audit.goto(path)
            assert response is not None and response.status == 200, name
            assert audit.evaluate(SIDEWAYS) == 0, name

    assert admin.is_superuser


def test_the_take_back_and_near_duplicate_pages_fit_a_phone(reviewer: User, live_server: Any) -> None:
    """The candidate pages added with reversible decisions and near-duplicates at 390 × 844: a
    near-duplicate copy (its Similar card and "Reject as duplicate"), a rejected candidate (Reopen)
    and an approved one (Retire, Revert), with Undo offered on it."""
    lesson = "Rotate the staging database credentials every ninety days, then restart the workers."
    original = approve(make_candidate(SCOPES[0], proposal=experience(lesson=lesson)), reviewer)
    copy = make_candidate(SCOPES[0], proposal=experience(lesson=lesson + " Always."))
    rejected = make_candidate(SCOPES[1])
    reject(rejected, reviewer, "Not a lesson.")
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.set_viewport_size(PHONE)
        for name, path in (
            ("near-duplicate copy", f"/review/candidates/{copy.pk}/"),
            ("rejected candidate", f"/review/candidates/{rejected.pk}/?status=rejected"),
            ("approved candidate", f"/review/candidates/{original.pk}/?status=approved"),
        ):
            page.goto(path)
            assert page.evaluate(SIDEWAYS) == 0, name
            assert page.evaluate(SMALL_TARGETS) == [], name
        page.goto(f"/review/candidates/{copy.pk}/")
        duplicate_button = page.get_by_role("button", name=re.compile("^Reject as duplicate"))
        has_duplicate_button = duplicate_button.count() > 0
        _shot(page, "22-near-duplicate-390")

    assert has_duplicate_button  # the page under test really shows the wide button


# Boxes whose content is wider than they are and shows past them (an element meant to scroll or
# to cut its text with an ellipsis is not one).
OVERFLOWING = """() => [...document.querySelectorAll('main *, .topbar *')].filter(el => {
  const style = getComputedStyle(el);
  if (style.display === 'none' || style.display === 'inline' || !el.clientWidth) return false;
  if (['auto', 'scroll', 'hidden', 'clip'].includes(style.overflowX)) return false;
  return el.scrollWidth > el.clientWidth + 1;
}).map(el => `${el.tagName}.${el.className} ${el.scrollWidth}>${el.clientWidth}`)"""


def test_after_an_approval_on_a_phone_undo_is_on_screen_and_nothing_scrolls_sideways(
    reviewer: User, live_server: Any
) -> None:
    """Issue 32: the message naming the new Artifact (a long id) made the page 444 px wide and put
    Undo below the screen; the queue's family counts stuck out of their box."""
    from playwright.sync_api import expect

    seed_realistic_queue(reviewer, pending=6)
    candidate = make_candidate(SCOPES[2], proposal=experience(lesson=LONG_LESSON.format(n=99)))
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        for width in (320, 360, PHONE["width"]):
            page.set_viewport_size({"width": width, "height": PHONE["height"]})
            page.goto("/review/")
            assert page.evaluate(SIDEWAYS) == 0, ("queue", width)
            assert page.evaluate(OVERFLOWING) == [], ("queue", width)
        page.goto(f"/review/candidates/{candidate.pk}/")
        page.get_by_role("button", name=re.compile("^Approve version")).click()
        undo = page.get_by_role("button", name=re.compile("^Undo"))
        expect(undo.first).to_be_visible()
        assert page.evaluate(SIDEWAYS) == 0, "after the approval"
        box = _box(undo.first)
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
        assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], box
        assert page.evaluate(SMALL_TARGETS) == [], "after the approval"
        _axe(page, "after an approval at 390")
        _shot(page, "32-approved-390")
