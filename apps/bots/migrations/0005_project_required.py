import django.db.models.deletion
from django.db import migrations, models

import apps.bots.models


class Migration(migrations.Migration):
    # Apart from 0004_project: on PostgreSQL a table cannot be altered in the transaction that updated
    # its rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("bots", "0004_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="bot",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
        migrations.AlterField(
            model_name="bot",
            name="agent_id",
            field=models.CharField(
                default=apps.bots.models.new_object_id,
                help_text="24 hexadecimal characters; the API calls it agent_id.",
                max_length=24,
                verbose_name="bot id",
            ),
        ),
        migrations.AddConstraint(
            model_name="bot",
            constraint=models.UniqueConstraint(fields=("project", "agent_id"), name="bot_agent_id_per_project"),
        ),
    ]
