"""Memory no longer names the sources of a session (issue 33): the pipeline cites the evidence of
the Memory it materializes by an opaque reference (``materialize.opaque_source_ref``), because a
source id may carry its session id and every agent of the scope reads Memory. Here the entry
versions written before that get the same references. Only the pipeline (and revisions or
reversals, which copy a previous version's references) writes ``source_refs`` on Memory, so every
reference not yet opaque is rewritten; the function is frozen here as of this migration."""

from django.db import migrations
from django.utils.crypto import salted_hmac

SALT = "powercontext.pipeline.memory-source-ref"
BATCH = 500


def _opaque(scope_id, source_id):
    digest = salted_hmac(SALT, f"{scope_id}\0{source_id}", algorithm="sha256").hexdigest()
    return f"ref:{digest[:32]}"


def _rewritten(scope_id, refs):
    changed = False
    out = []
    for ref in refs:
        source_id = ref.get("source_id") if isinstance(ref, dict) else None
        if isinstance(source_id, str) and not source_id.startswith("ref:"):
            ref = {**ref, "source_id": _opaque(scope_id, source_id)}
            changed = True
        out.append(ref)
    return out if changed else None


def opaque_refs(apps, schema_editor):
    versions = apps.get_model("powercontext", "MemoryEntryVersion").objects.using(
        schema_editor.connection.alias
    )
    last = 0
    while True:
        rows = list(
            versions.filter(pk__gt=last).order_by("pk").values_list("pk", "scope_id", "source_refs")[:BATCH]
        )
        if not rows:
            return
        for pk, scope_id, refs in rows:
            if refs:
                new = _rewritten(scope_id, refs)
                if new is not None:
                    versions.filter(pk=pk).update(source_refs=new)
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0003_set_aside_sources"),
        ("powercontext", "0021_source_captured_by"),
    ]

    operations = [migrations.RunPython(opaque_refs, migrations.RunPython.noop, elidable=True)]
