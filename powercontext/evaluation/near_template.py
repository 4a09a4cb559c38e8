"""A template-built Experience corpus with known copies, for the near-duplicate rule (issue 32).

Every proposal fills the same template: each of its four fields (~1,300-1,550 characters) holds
the same boilerplate sentences (about 1,000 characters) around the slots of its topic (one of
``TOPICS`` services, shared by many) and sentences of words of its own, so distinct proposals
share most of their words. ``copies`` of them are real copies: an earlier proposal reworded (its
sentences reordered, a few words swapped, one boilerplate sentence dropped). Used by
``manage.py bench_review_near`` and ``tests/review/test_near_duplicates.py``. Plain data, no Django.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIELDS = ("situation", "action", "outcome", "lesson")
TOPICS = 12

# The template's boilerplate, per field; ``{service}`` and ``{part}`` are the topic's slots.
BOILERPLATE: dict[str, tuple[str, ...]] = {
    "situation": (
        "During the weekly production deploy of the {service} service the on-call engineer followed the "
        "standard release runbook and rolled the change out to all three regions in order.",
        "The release train had been green for the whole week and the {part} component passed every "
        "automated check in the staging environment before the rollout began.",
        "Monitoring dashboards for the {service} service showed normal latency and error rates right up "
        "to the moment the first region received the new build.",
        "The team had scheduled the deploy in the usual maintenance window announced to customers two "
        "days earlier through the status page and the support mailing list.",
        "Alerts fired within minutes of the rollout and the incident commander was paged according to "
        "the escalation policy that the operations group maintains.",
    ),
    "action": (
        "The on-call engineer paged the owning team, opened an incident channel, rolled back the release, "
        "and recorded the incident timeline in the tracker as the runbook requires.",
        "Engineers from the {service} team joined the bridge call, compared the metrics of the {part} "
        "component across regions and collected logs from the affected hosts.",
        "A status page update was posted every thirty minutes until the mitigation was confirmed by the "
        "monitoring dashboards and the support queue stopped growing.",
        "The deploy pipeline was frozen for the {service} service so that no further change could reach "
        "production while the investigation was still running.",
        "Once the rollback finished the engineers verified the previous build on a canary host before "
        "restoring traffic to all regions in the usual order.",
    ),
    "outcome": (
        "Service was restored within the incident budget and the postmortem was filed with the standard "
        "template and reviewed at the weekly operations meeting.",
        "Customer impact stayed limited to a short window of elevated errors on the {service} service "
        "and the support team answered every ticket that was opened.",
        "The {part} component was returned to its previous version and the release train resumed the "
        "following day after the owning team approved the fix.",
        "The incident review assigned follow-up actions to the owning team with due dates tracked in the "
        "reliability backlog and checked at the next planning session.",
        "No data was lost and the error budget of the quarter still had room left after the incident "
        "was closed by the incident commander.",
    ),
    "lesson": (
        "The team agreed on the following lesson for the {service} service and added it to the runbook "
        "so that every on-call engineer reads it before the next release.",
        "This lesson applies to every deploy of the {part} component and was shared with the other "
        "teams at the weekly operations meeting.",
        "The runbook now links to this lesson from its checklist and the release template asks the "
        "author to confirm it before the rollout starts.",
        "Reviewers of future changes to the {service} service should check this lesson during code "
        "review and ask for evidence that it was followed.",
    ),
}

SYLLABLES = (
    "ka lo mi ner sto pa ri ven tu dex qua zol fen gri bax mur tel sin vop hak jun ris dor pel "
    "wex yan cob lum fra gid nob tar sev kul mop"
).split()
SPECIFIC_WORDS = (6, 6, 6, 8)  # own words per field (situation, action, outcome, lesson)
SPECIFIC_SENTENCES = 6  # sentences of own words per field
SWAPS = {
    "engineer": "operator",
    "release": "rollout",
    "checked": "verified",
    "showed": "displayed",
    "before": "ahead of",
}


@dataclass(frozen=True)
class Item:
    """One proposal of the corpus; ``copy_of``: the index of the earlier proposal it copies."""

    proposal: dict[str, str]
    copy_of: int | None = None


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def _own_sentences(rng: random.Random, words: list[str], topic: list[str]) -> list[str]:
    shapes = (
        "The {a} step of the {t} handler failed because the {b} setting still pointed at the old {c} value.",
        "Logs showed that {a} and {b} disagreed about the {t} limit whenever the {c} job ran at the same time.",
        "Nobody had noticed that the {a} flag was read by the {t} worker before the {b} cache held the {c} entry.",
        "The fix moved the {a} check into the {t} module and kept the {b} fallback until the {c} rollout was done.",
        "Next time compare the {a} value with the {t} default and alert when the {b} queue or the {c} pool grows.",
    )
    out = []
    for index in range(SPECIFIC_SENTENCES):
        a, b, c = (words[(index * 3 + k) % len(words)] for k in range(3))
        out.append(rng.choice(shapes).format(a=a, b=b, c=c, t=rng.choice(topic)))
    return out


def _proposal(
    rng: random.Random, topic: tuple[str, str, list[str]]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    service, part, words = topic
    sentences: dict[str, list[str]] = {}
    for name, count in zip(FIELDS, SPECIFIC_WORDS, strict=True):
        own = [_word(rng) for _ in range(count)]
        template = [line.format(service=service, part=part) for line in BOILERPLATE[name]]
        sentences[name] = [*template, *_own_sentences(rng, own, words)]
    return {name: " ".join(lines) for name, lines in sentences.items()}, sentences


def _reworded(rng: random.Random, sentences: dict[str, list[str]]) -> dict[str, str]:
    proposal = {}
    for name, lines in sentences.items():
        kept = list(lines)
        kept.pop(rng.randrange(len(BOILERPLATE[name])))  # one boilerplate sentence dropped
        rng.shuffle(kept)
        text = " ".join(kept)
        for old, new in SWAPS.items():
            if rng.random() < 0.5:
                text = text.replace(f" {old} ", f" {new} ")
        proposal[name] = text
    return proposal


def corpus(size: int = 500, copies: int = 16, seed: int = 32) -> list[Item]:
    """``size`` proposals in proposal order, ``copies`` of them copies of an earlier distinct one
    (spread over the corpus, each original copied at most once)."""
    rng = random.Random(seed)
    topics = [(_word(rng), _word(rng), [_word(rng) for _ in range(4)]) for _ in range(TOPICS)]
    originals: list[tuple[int, dict[str, list[str]]]] = []  # (corpus index, sentences)
    copied: set[int] = set()
    items: list[Item] = []
    step = size // (copies + 1) if copies else size + 1
    copy_at = {step * (n + 1) for n in range(copies)}
    for index in range(size):
        if index in copy_at and len(originals) > len(copied):
            source = rng.choice([at for at, _ in originals if at not in copied])
            copied.add(source)
            items.append(Item(_reworded(rng, dict(originals)[source]), copy_of=source))
            continue
        proposal, sentences = _proposal(rng, topics[index % TOPICS])
        originals.append((index, sentences))
        items.append(Item(proposal))
    return items
