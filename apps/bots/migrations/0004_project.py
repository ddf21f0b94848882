import django.db.models.deletion
from django.db import migrations, models

from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_apikey_project_required"),
        ("bots", "0003_alter_bot_agent_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="bot",
            name="project",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"
            ),
        ),
        migrations.RunPython(fill_with_default_project("bots", "Bot"), migrations.RunPython.noop),
    ]
