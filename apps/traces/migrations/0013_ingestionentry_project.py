import django.db.models.deletion
from django.db import migrations, models

from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    # The ledger per project: the entries written before it counted every project's traffic and
    # cannot be split, so they go to `default` (as every row from before projects did).
    dependencies = [
        ("core", "0005_apikey_project_required"),
        ("traces", "0012_retention_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="ingestionentry",
            name="project",
            field=models.ForeignKey(
                db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.RunPython(fill_with_default_project("traces", "IngestionEntry"), migrations.RunPython.noop),
    ]
