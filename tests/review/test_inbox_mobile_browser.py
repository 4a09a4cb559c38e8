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

from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate, skill
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
