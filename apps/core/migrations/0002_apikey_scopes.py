from django.db import migrations, models

import apps.core.models

# Spelled out rather than imported: this migration must keep meaning what it meant when it ran.
STAFF_SCOPES = ["read", "ingest", "evaluate", "configure", "admin"]
OTHER_SCOPES = ["read", "ingest", "evaluate"]


def grant_scopes_by_owner(apps, schema_editor):
    """Keys made before scopes existed keep what their owner's staff flag let them do: staff keys
    everything, the others all but configuration and destructive calls (which is what the new
    scopes take away from them, on purpose)."""
    ApiKey = apps.get_model("core", "ApiKey")
    ApiKey.objects.filter(user__is_staff=True).update(scopes=STAFF_SCOPES)
    ApiKey.objects.filter(user__is_staff=False).update(scopes=OTHER_SCOPES)


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="scopes",
            field=models.JSONField(default=apps.core.models.default_key_scopes),
        ),
        migrations.RunPython(grant_scopes_by_owner, migrations.RunPython.noop),
    ]
