import django.db.models.deletion
from django.db import migrations, models

from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_apikey_project_required"),
        ("traces", "0008_assembly_waiting_spans"),
    ]

    operations = [
        migrations.AddField(
            model_name="agenttrace",
            name="project",
            field=models.ForeignKey(
                db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.RunPython(fill_with_default_project("traces", "AgentTrace"), migrations.RunPython.noop),
    ]
