"""The use prior and the hold rule: how feedback counters change what prepare selects.

Pure module: standard library only; the caller passes the counters, the policy and ``now``
(seconds since the epoch).

- **Held.** A Memory entry version reported ``wrong`` or ``outdated`` by at least
  ``hold_reporters`` distinct reporters (since a person last dismissed its reports) is held out of
  prepare until a person decides. An Experience is never held: a reviewer approved it, and
  agents alone cannot bury that.
- **Prior.** Among hits that already passed the relevance floor, a hit's score is multiplied by
  ``1 + prior`` with ``0 <= prior <= cap``. Use raises it: ``log(1 + uses)`` relative to
  ``saturation_uses``, halved every ``half_life_days`` since the last use. Usage alone is not
  value: a Memory entry with an open report of ``wrong`` or ``outdated`` (fewer reporters than
  the hold) gets no prior however often it was used; it is not pushed below its search rank
  either (a single report may be mistaken: a person decides, and the replay evaluation lost a
  question when one report lowered a true entry). So a hit can pass another only when its
  score is at least ``1 / (1 + cap)`` of the other's (0.91 at a cap of 0.10): a clearly better
  match is never reordered, and the prior never admits what the floor rejected, since it only
  reorders hits the floor kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

MEMORY = "memory"
SECONDS_PER_DAY = 86400.0

Hit = TypeVar("Hit")


def memory_target(entry_version_id: str) -> str:
    """The key of a Memory entry version among its scope's feedback items."""
    return f"m:{entry_version_id}"


def experience_target(artifact_id: str, revision: int) -> str:
    """The key of an Experience revision among its scope's feedback items."""
    return f"e:{artifact_id}@{revision}"


class Usage(NamedTuple):
    """One item's feedback counters (``FeedbackCounter``), as prepare reads them; times are
    seconds since the epoch (this module reads no clock and no calendar). A named tuple: one is
    made per weighed hit on every prepare."""

    uses: int = 0
    last_used_at: float | None = None
    reporters: int = 0
    wrong_reporters: int = 0
    outdated_reporters: int = 0
    last_reported_at: float | None = None


NO_USAGE = Usage()


@dataclass(frozen=True)
class PriorPolicy:
    """The prior's settings (``POWERCONTEXT_FEEDBACK_*``); ``cap`` 0 turns the prior off,
    ``hold_reporters`` 0 turns holding off."""

    cap: float = 0.10
    saturation_uses: int = 8
    half_life_days: float = 30.0
    hold_reporters: int = 2

    def held(self, usage: Usage, family: str) -> bool:
        return family == MEMORY and self.hold_reporters > 0 and usage.reporters >= self.hold_reporters

    def prior(self, usage: Usage, family: str, now: float) -> float:
        """The hit's prior in ``[0, cap]`` (0 for an item nobody used, and for a Memory entry
        with an open report). Runs for every weighed hit of every prepare: plain arithmetic."""
        if self.cap <= 0 or usage.uses <= 0 or (family == MEMORY and usage.reporters > 0):
            return 0.0
        saturation = self.saturation_uses if self.saturation_uses > 1 else 1
        strength = 1.0 if usage.uses >= saturation else math.log1p(usage.uses) / math.log1p(saturation)
        if usage.last_used_at is None or self.half_life_days <= 0 or usage.last_used_at >= now:
            return self.cap * strength
        halvings = (now - usage.last_used_at) / SECONDS_PER_DAY / self.half_life_days
        return self.cap * strength * math.pow(0.5, halvings)


def order(scores: Sequence[float], priors: Mapping[int, float]) -> list[int]:
    """The indexes of hits with ``scores`` (in search order) ordered by ``score * (1 + prior)``,
    best first; ``priors`` maps an index to its prior (absent: 0). A hit's score is first taken as
    at most the score of every hit before it (search order is the ranking, whatever its scores
    say), so hits without a prior always keep their search order among themselves, and with no
    prior nothing moves. Equal adjusted scores keep search order."""
    if not any(priors.values()):
        return list(range(len(scores)))
    negated: list[float] = []  # sorted ascending; the sort is stable, so ties keep search order
    ceiling = math.inf
    for index, value in enumerate(scores):
        if value < ceiling:
            ceiling = value
        prior = priors.get(index)
        negated.append(-ceiling * (1.0 + prior) if prior else -ceiling)
    return sorted(range(len(scores)), key=negated.__getitem__)
