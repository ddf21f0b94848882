import django.db.models.deletion
from django.db import migrations, models

from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_apikey_project_required"),
        ("testsets", "0003_rename_agent_bot"),
    ]

    operations = [
        migrations.AddField(
            model_name="testset",
            name="project",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.AddField(
            model_name="dataset",
            name="project",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.RunPython(fill_with_default_project("testsets", "TestSet", "Dataset"), migrations.RunPython.noop),
    ]
