import django.db.models.deletion
from django.db import migrations, models

import apps.core.models


class Migration(migrations.Migration):
    # Apart from 0013: PostgreSQL refuses to alter a table in the transaction that updated its rows
    # under a deferred foreign key.
    dependencies = [
        ("traces", "0013_ingestionentry_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ingestionentry",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                default=apps.core.models.default_project_id,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.project",
            ),
        ),
        # Every read is one project's window: the index leads with the project.
        migrations.RemoveIndex(model_name="ingestionentry", name="ingestionentry_at"),
        migrations.AddIndex(
            model_name="ingestionentry",
            index=models.Index(fields=["project", "at", "source"], name="ingestionentry_project_at"),
        ),
    ]
