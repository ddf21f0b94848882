import django.db.models.deletion
from django.db import migrations, models

import apps.core.models


class Migration(migrations.Migration):
    # Apart from 0009: PostgreSQL refuses to alter a table in the transaction that updated its rows
    # under a deferred foreign key.
    dependencies = [
        ("traces", "0009_trace_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="agenttrace",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                default=apps.core.models.default_project_id,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.project",
            ),
        ),
        # Session ids are the client's: unique per project, not across projects.
        migrations.AddConstraint(
            model_name="agenttrace",
            constraint=models.UniqueConstraint(fields=("project", "session_id"), name="agenttrace_unique_project_session"),
        ),
        migrations.AlterField(
            model_name="agenttrace",
            name="session_id",
            field=models.CharField(max_length=255),
        ),
    ]
