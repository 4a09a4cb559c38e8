"""Near-duplicate sketches in the current term form (stemmed, without stop words, the lesson or
a Skill's name and description emphasized) for every candidate version, Skills included (issue
22): the queue compares stored sketches only, never proposals."""

from itertools import islice
from typing import Any

from django.db import migrations

BATCH = 200


def refill(apps: Any, schema_editor: Any) -> None:
    from review.selectors.nearness import sketch, terms

    versions = apps.get_model("review", "CandidateVersion")
    rows = versions.objects.select_related("candidate").only("pk", "proposal", "candidate__family")
    stream = rows.iterator(chunk_size=BATCH)
    while chunk := list(islice(stream, BATCH)):
        for version in chunk:
            found = terms(version.proposal, version.candidate.family)
            version.terms_sketch, version.terms_count = sketch(found), len(found)
        versions.objects.bulk_update(chunk, ["terms_sketch", "terms_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0007_candidate_viewing"),
    ]

    operations = [migrations.RunPython(refill, migrations.RunPython.noop)]
