"""The use prior and the hold rule: how feedback counters change what prepare selects.

Pure module: standard library only; the caller passes the counters, the policy and ``now``
(seconds since the epoch).

- **Held.** A Memory entry version reported ``wrong`` or ``outdated`` by at least
  ``hold_reporters`` distinct reporters (since a person last dismissed its reports) is held out of
  prepare until a person decides. An Experience is never held: a reviewer approved it, and
  agents alone cannot bury that.
- **Prior.** Among hits that already passed the relevance floor, a hit's score is multiplied by
  ``1 + prior`` with ``-cap <= prior <= cap``. Use raises it: ``log(1 + uses)`` relative to
  ``saturation_uses``, halved every ``half_life_days`` since the last use. A Memory entry that
  fewer reporters than the hold threshold reported is lowered by ``cap * reporters /
  hold_reporters`` (usage alone is not value). So a hit can pass another only when its score is
  at least ``(1 - cap) / (1 + cap)`` of the other's (0.82 at the default cap of 0.10): a clearly
  better match is never reordered, and the prior never admits what the floor rejected, since
  it only reorders hits the floor kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

MEMORY = "memory"
SECONDS_PER_DAY = 86400.0

Hit = TypeVar("Hit")


def memory_target(entry_version_id: str) -> str:
    """The key of a Memory entry version among its scope's feedback items."""
    return f"m:{entry_version_id}"


def experience_target(artifact_id: str, revision: int) -> str:
    """The key of an Experience revision among its scope's feedback items."""
    return f"e:{artifact_id}@{revision}"


@dataclass(frozen=True)
class Usage:
    """One item's feedback counters (``FeedbackCounter``), as prepare reads them; times are
    seconds since the epoch (this module reads no clock and no calendar)."""

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
        """The hit's prior in ``[-cap, cap]`` (0 for an item nobody used or reported)."""
        if self.cap <= 0:
            return 0.0
        use = 0.0
        if usage.uses > 0:
            strength = min(1.0, math.log1p(usage.uses) / math.log1p(max(1, self.saturation_uses)))
            age_days = 0.0
            if usage.last_used_at is not None:
                age_days = max(0.0, (now - usage.last_used_at) / SECONDS_PER_DAY)
            recency = 0.5 ** (age_days / self.half_life_days) if self.half_life_days > 0 else 1.0
            use = strength * recency
        report = 0.0
        if family == MEMORY and usage.reporters > 0:
            report = min(1.0, usage.reporters / max(1, self.hold_reporters))
        return max(-self.cap, min(self.cap, self.cap * (use - report)))


def rank(hits: Sequence[Hit], score: Callable[[Hit], float], priors: Mapping[int, float]) -> list[Hit]:
    """``hits`` ordered by ``score * (1 + prior)``, best first; ``priors`` maps an index of
    ``hits`` to its prior (absent: 0). A hit's score is first taken as at most the score of every
    hit before it (search order is the ranking, whatever its scores say), so hits without a prior
    always keep their search order among themselves, and with no prior nothing moves. Equal
    adjusted scores keep search order."""
    if not any(priors.values()):
        return list(hits)
    adjusted: list[float] = []
    ceiling = math.inf
    for index, hit in enumerate(hits):
        ceiling = min(ceiling, score(hit))
        adjusted.append(ceiling * (1.0 + priors.get(index, 0.0)))
    order = sorted(range(len(hits)), key=lambda index: (-adjusted[index], index))
    return [hits[index] for index in order]
