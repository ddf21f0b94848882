import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # Apart from 0015_project: on PostgreSQL a table cannot be altered in the transaction that updated
    # its rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("runs", "0015_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="evaluationrun",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
        migrations.AddIndex(
            model_name="evaluationrun",
            index=models.Index(fields=["project", "-created_at", "-id"], name="run_project_newest"),
        ),
    ]
