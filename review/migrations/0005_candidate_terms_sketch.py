"""The near-duplicate term sketch of each candidate version (issue 20, N2), filled for the
Experience versions already stored."""

from typing import Any

from django.db import migrations, models


def fill(apps: Any, schema_editor: Any) -> None:
    from review.selectors.similar import sketch, terms

    versions = apps.get_model("review", "CandidateVersion")
    batch: list[Any] = []
    rows = versions.objects.filter(candidate__family="experience", terms_sketch__isnull=True)
    for version in rows.only("pk", "proposal").iterator(chunk_size=200):
        found = terms(version.proposal)
        version.terms_sketch, version.terms_count = sketch(found), len(found)
        batch.append(version)
        if len(batch) >= 200:
            versions.objects.bulk_update(batch, ["terms_sketch", "terms_count"])
            batch = []
    if batch:
        versions.objects.bulk_update(batch, ["terms_sketch", "terms_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0004_queue_density"),
    ]

    operations = [
        migrations.AddField(
            model_name="candidateversion",
            name="terms_sketch",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="candidateversion",
            name="terms_count",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
