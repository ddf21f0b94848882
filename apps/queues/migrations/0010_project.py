import django.db.models.deletion
from django.db import migrations, models

from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_apikey_project_required"),
        ("queues", "0009_drop_sample_percent"),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewqueue",
            name="project",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.RunPython(fill_with_default_project("queues", "ReviewQueue"), migrations.RunPython.noop),
    ]
