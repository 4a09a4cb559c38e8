"""The near-duplicate rule (issue 22): the score discounts words a scope's proposals share, so
distinct lessons written into one template stay apart; the threshold is calibrated on the
labelled pairs; only the later copy of a pair is flagged; Skills are compared too; the queue
filters by the flag."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from powercontext.evaluation import near_duplicates
from review.models import Candidate
from review.selectors import near_window, nearness, similar
from tests.review.conftest import approve, make_candidate, skill

TEMPLATE = {
    "situation": (
        "During the weekly production deploy of the billing service the on-call engineer followed the "
        "standard release runbook and rolled the change out to all three regions in order."
    ),
    "action": (
        "The on-call engineer paged the owning team, opened an incident channel, rolled back the release, "
        "and recorded the incident timeline in the tracker as the runbook requires."
    ),
    "outcome": (
        "Service was restored within the incident budget and the postmortem was filed with the standard "
        "template and reviewed at the weekly operations meeting."
    ),
}
LESSONS = [
    "Deploy configuration before the code that reads it.",
    "Run schema migrations separately from the code release.",
    "Stream exports instead of loading whole batches in memory.",
    "Version cache keys and warm the new keys before switching.",
    "Keep rate-limit counters in a shared store, not per node.",
]


def _templated(lesson: str) -> dict[str, str]:
    return {**TEMPLATE, "lesson": lesson}


def _scores(proposals: list[dict[str, str]], a: int, b: int) -> tuple[float, float]:
    """(weighted score in the window of ``proposals``, plain Jaccard) of proposals a and b."""
    sets = [nearness.terms(p) for p in proposals]
    weights = nearness.Weights(nearness.sketch(t) for t in sets)
    one, two = (nearness.sketched(nearness.sketch(sets[i]), len(sets[i]), weights) for i in (a, b))
    words = [nearness.terms(proposals[i], emphasis=0) for i in (a, b)]
    return nearness.score(one, two, weights), similarity_plain(*words)


def similarity_plain(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b)


def test_distinct_lessons_sharing_a_template_are_not_near_duplicates() -> None:
    proposals = [_templated(lesson) for lesson in LESSONS]
    weighted, plain = _scores(proposals, 0, 1)
    assert plain >= 0.7  # what the plain word overlap said (the issue saw 82 %)
    assert weighted < near_window.DEFAULT_THRESHOLD


def test_the_same_lesson_reworded_in_the_template_is_a_near_duplicate() -> None:
    proposals = [_templated(lesson) for lesson in LESSONS]
    proposals.append(_templated("Ship configuration before the code that depends on it."))
    weighted, _ = _scores(proposals, 0, len(proposals) - 1)
    assert weighted >= near_window.DEFAULT_THRESHOLD
    # ... and reordering its sentences changes nothing.
    reordered = {**proposals[0], "situation": ". ".join(reversed(proposals[0]["situation"].split(". ")))}
    assert _scores([*proposals, reordered], 0, len(proposals))[0] == pytest.approx(1.0)


def test_terms_are_stemmed_without_stop_words_and_the_lesson_counts_more() -> None:
    proposal = {"situation": "Painted the fence", "action": "", "outcome": "", "lesson": "paints"}
    assert nearness.terms(proposal, emphasis=0) == {"paint", "fenc"}
    assert nearness.terms(proposal, emphasis=2) == {"paint", "fenc", "0lesson:paint", "1lesson:paint"}
    found = nearness.terms(skill(name="Rotate keys", description="Keys"), "skill", emphasis=1)
    assert {"rotat", "key", "tag", "0name:rotat", "0name:key", "0description:key"} <= found
    assert "0instructions:tag" not in found
    assert nearness.terms({"name": "x"}, "memory") == set()


def test_the_calibrated_threshold_keeps_precision_and_recall_on_the_labelled_pairs() -> None:
    rows = near_duplicates.load()
    assert len(rows) >= 60
    kinds = {row["kind"] for row in rows}
    assert {"paraphrase", "reordering", "boilerplate"} <= kinds
    assert {row["family"] for row in rows} == {"experience", "skill"}
    scored = near_duplicates.score_pairs(rows)
    report = near_duplicates.evaluate(scored, near_window.DEFAULT_THRESHOLD)
    assert report.precision >= 0.95 and report.recall >= 0.95
    # The plain word overlap (the rule before) cannot do both on the same pairs at any threshold.
    assert all(
        min(plain.precision, plain.recall) < 0.9
        for plain in (near_duplicates.evaluate(scored, t / 100, plain=True) for t in range(30, 95, 5))
    )


def test_the_command_reports_precision_and_recall(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("eval_near_duplicates")
    out = capsys.readouterr().out
    assert re.search(r"\d+ pairs \(\d+ duplicates\) at threshold 0\.40: precision 1\.000, recall 1\.000", out)


def test_the_order_puts_approved_first_then_proposal_time_then_id() -> None:
    from datetime import UTC, datetime

    t1, t2 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    assert near_window.earlier(near_window.APPROVED_ORDER, near_window.pending_order(t1, 1))
    assert near_window.earlier(near_window.pending_order(t1, 9), near_window.pending_order(t2, 2))
    assert near_window.earlier(near_window.pending_order(t1, 2), near_window.pending_order(t1, 3))
    assert not near_window.earlier(near_window.pending_order(t2, 2), near_window.pending_order(t1, 9))


# --- in the database -------------------------------------------------------------------------------


def _queue(client: Client, query: str = "") -> str:
    response = client.get(reverse("review:queue") + query)
    assert response.status_code == 200
    return response.content.decode()


def _flagged(page: str) -> dict[int, str]:
    return {
        int(pk): of
        for pk, of in re.findall(
            r'<tr data-queue-row data-pk="(\d+)".*?data-duplicate-of="([^"]+)"', page.replace("\n", " ")
        )
        if "</tr>" not in of
    }


@pytest.mark.django_db
def test_only_the_later_copy_is_flagged_and_the_filter_lists_only_flagged_rows(reviewer: User) -> None:
    client = Client()
    client.force_login(reviewer)
    rows = [make_candidate("tmpl", proposal=_templated(lesson)) for lesson in LESSONS]
    later = make_candidate(
        "tmpl", proposal=_templated("Ship configuration before the code that depends on it.")
    )
    flags = similar.near_duplicate_flags(list(Candidate.objects.select_related("latest").order_by("pk")))
    assert {pk: f.candidate_pk for pk, f in flags.items() if f} == {later.pk: rows[0].pk}

    page = _queue(client)
    assert (
        f'data-duplicate-of="#{rows[0].pk}" href="{reverse("review:candidate", args=[rows[0].pk])}"' in page
    )
    assert f"near-duplicate of #{rows[0].pk}</a>" in page
    assert page.count('class="flag near-duplicate"') == 1

    filtered = _queue(client, "?near=1")
    assert re.findall(r'<tr data-queue-row data-pk="(\d+)"', filtered) == [str(later.pk)]
    assert 'data-count="matching">1<' in filtered
    assert f'href="{reverse("review:candidate", args=[later.pk])}?near=1"' in filtered  # the filter travels
    refused = client.get(reverse("review:queue") + "?near=2")  # an unknown flag: a form error, not a 500
    assert refused.status_code == 200 and "Flag:" in refused.content.decode()


@pytest.mark.django_db
def test_skills_are_flagged_against_pending_and_approved_skills(reviewer: User) -> None:
    base = skill(name="Rotate database credentials", instructions="Create a second user.\nSwitch the secret.")
    original = approve(make_candidate("sk", family="skill", proposal=dict(base)), reviewer)
    copy = make_candidate("sk", family="skill", proposal={**base, "name": "Rotate the database credentials"})
    other = make_candidate(
        "sk",
        family="skill",
        proposal=skill(
            name="Purge a CDN path",
            description="Invalidate the CDN.",
            instructions="List paths.\nSend the purge.",
            validation=["The ETag changed"],
        ),
    )
    flags = similar.near_duplicate_flags(
        list(Candidate.objects.filter(status="pending").select_related("latest"))
    )
    assert original.result_head is not None
    assert flags[copy.pk] is not None and flags[copy.pk].artifact_id == original.result_head.artifact_id
    assert flags[other.pk] is None
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("review:candidate", args=[copy.pk])).content.decode()
    assert "Similar Skills" in page and f"Reject as duplicate of {original.result_head.artifact_id}" in page
    assert "near-duplicate of" in page


@pytest.mark.django_db
def test_the_migration_refills_every_versions_sketch_skills_included() -> None:
    import importlib

    from django.apps import apps

    from review.models import CandidateVersion

    refill = importlib.import_module("review.migrations.0008_near_duplicate_terms").refill
    made = [make_candidate("m", family="skill", proposal=skill()), make_candidate("m")]
    CandidateVersion.objects.update(terms_sketch=None, terms_count=None)
    refill(apps, None)
    for candidate in made:
        version = CandidateVersion.objects.get(candidate=candidate)
        found = nearness.terms(version.proposal, candidate.family)
        assert found and (version.terms_sketch, version.terms_count) == (nearness.sketch(found), len(found))


# --- issue 32: template-built corpora, the prefix index, bulk approval ------------------------------


def test_a_word_every_proposal_of_a_large_window_holds_weighs_almost_nothing() -> None:
    common, rare = 1, 2
    large = nearness.Weights([[common, 1000 + n] for n in range(500)] + [[common, rare]])
    assert large.of(common) < 0.1 * large.of(rare)
    small = nearness.Weights([[common, 3], [common, rare]])  # two proposals: no sign of a template
    assert small.of(common) > 0.9 and small.of(rare) > small.of(common)


def test_the_prefix_index_misses_no_pair_that_reaches_the_threshold() -> None:
    from powercontext.evaluation import near_template

    proposals = [item.proposal for item in near_template.corpus(size=60, copies=12, seed=3)]
    proposals += [_templated(lesson) for lesson in LESSONS]  # small sets: exact comparison
    proposals += [
        row[side] for row in near_duplicates.load() if row["family"] == "experience" for side in "ab"
    ]
    sets = [nearness.terms(p) for p in proposals]
    weights = nearness.Weights(nearness.sketch(t) for t in sets)
    sketches = [nearness.sketched(nearness.sketch(t), len(t), weights) for t in sets]
    scores = {
        (one, other): nearness.score(sketches[one], sketches[other], weights)
        for one in range(len(sketches))
        for other in range(one + 1, len(sketches))
    }
    for threshold in (0.1, 0.25, near_window.DEFAULT_THRESHOLD, 0.7):
        index = nearness.PrefixIndex(sketches, weights, threshold)
        reaching = [pair for pair, value in scores.items() if value >= threshold]
        assert len(reaching) > 20  # the corpus holds pairs at every threshold tried
        for one, other in reaching:
            assert other in index.candidates(one) and one in index.candidates(other), (threshold, one, other)


@pytest.mark.django_db
def test_a_template_corpus_flags_its_copies_and_no_distinct_item(
    reviewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from powercontext.evaluation import near_template

    items = near_template.corpus(size=150, copies=16)
    rows = [make_candidate("tmpl-corpus", proposal=item.proposal) for item in items]
    copies = {rows[n].pk: rows[item.copy_of].pk for n, item in enumerate(items) if item.copy_of is not None}
    assert len(copies) == 16
    scored: list[int] = []
    real_score = nearness.score

    def counted(*args: object) -> float:
        scored.append(1)
        return real_score(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nearness, "score", counted)
    flags = similar.near_duplicate_flags(list(Candidate.objects.select_related("latest").order_by("pk")))
    flagged = {pk: flag.candidate_pk for pk, flag in flags.items() if flag is not None}
    true_positives = sum(1 for pk, of in flagged.items() if copies.get(pk) == of)
    precision, recall = true_positives / len(flagged), true_positives / len(copies)
    assert (precision, recall) == (1.0, 1.0), (len(flagged), true_positives)
    # Only pairs sharing a rare word are scored, not all 11,175 pairs.
    assert len(scored) < 150 * 149 / 2 / 5

    client = Client()
    client.force_login(reviewer)
    assert 'data-count="matching">16<' in _queue(client, "?near=1")
