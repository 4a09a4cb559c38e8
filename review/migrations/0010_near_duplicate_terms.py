"""Near-duplicate sketches in the current term form (stemmed, without stop words) for every
candidate version, Skills included (issue 22): the queue compares stored sketches only."""

from typing import Any

from django.db import migrations


def refill(apps: Any, schema_editor: Any) -> None:
    from review.selectors.nearness import sketch, terms

    versions = apps.get_model("review", "CandidateVersion")
    batch: list[Any] = []
    for version in (
        versions.objects.select_related("candidate")
        .only("pk", "proposal", "candidate__family")
        .iterator(chunk_size=200)
    ):
        found = terms(version.proposal, version.candidate.family)
        version.terms_sketch, version.terms_count = sketch(found), len(found)
        batch.append(version)
        if len(batch) >= 200:
            versions.objects.bulk_update(batch, ["terms_sketch", "terms_count"])
            batch = []
    if batch:
        versions.objects.bulk_update(batch, ["terms_sketch", "terms_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0006_review_action"),
    ]

    operations = [migrations.RunPython(refill, migrations.RunPython.noop)]
