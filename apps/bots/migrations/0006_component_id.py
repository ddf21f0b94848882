"""A tool's and a knowledge base's API id becomes `component_id`, unique per bot; the primary key
stays as the row's own. Existing rows keep the id they showed (component_id = id)."""

from django.db import migrations, models
from django.db.models import F

import apps.bots.models


def copy_ids(apps, schema_editor):
    for name in ("BotTool", "KnowledgeBase"):
        apps.get_model("bots", name).objects.update(component_id=F("id"))


class Migration(migrations.Migration):
    dependencies = [("bots", "0005_project_required")]

    operations = [
        migrations.AddField(
            model_name="bottool",
            name="component_id",
            field=models.CharField(default=apps.bots.models.new_object_id, max_length=24),
        ),
        migrations.AddField(
            model_name="knowledgebase",
            name="component_id",
            field=models.CharField(default=apps.bots.models.new_object_id, max_length=24),
        ),
        migrations.RunPython(copy_ids, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="bottool",
            constraint=models.UniqueConstraint(fields=("bot", "component_id"), name="bottool_unique_component_id"),
        ),
        migrations.AddConstraint(
            model_name="knowledgebase",
            constraint=models.UniqueConstraint(fields=("bot", "component_id"), name="knowledgebase_unique_component_id"),
        ),
    ]
