from django.db import migrations

# Spelled out rather than imported: this migration must keep meaning what it meant when it ran.
ORDER = ["read", "ingest", "evaluate", "review", "configure", "admin"]


def grant_review_with_configure(apps, schema_editor):
    """Human reviews needed `configure` before the `review` scope existed: every key that holds
    `configure` gets `review` too, so nothing that worked stops working. A key without `configure`
    could not review, and still cannot. (Its owner's role still caps it at every request.)"""
    ApiKey = apps.get_model("core", "ApiKey")
    changed = []
    # In Python rather than a JSON `contains` lookup, which SQLite does not have; keys are few.
    for key in ApiKey.objects.only("pk", "scopes").iterator():
        scopes = list(key.scopes or [])
        if "configure" in scopes and "review" not in scopes:
            key.scopes = [s for s in ORDER if s in {*scopes, "review"}] + [s for s in scopes if s not in ORDER]
            changed.append(key)
    ApiKey.objects.bulk_update(changed, ["scopes"], batch_size=500)


def take_review_back(apps, schema_editor):
    ApiKey = apps.get_model("core", "ApiKey")
    changed = []
    for key in ApiKey.objects.only("pk", "scopes").iterator():
        if "review" in (key.scopes or []):
            key.scopes = [s for s in key.scopes if s != "review"]
            changed.append(key)
    ApiKey.objects.bulk_update(changed, ["scopes"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0007_auditevent"),
    ]

    operations = [
        migrations.RunPython(grant_review_with_configure, take_review_back, elidable=False),
    ]
