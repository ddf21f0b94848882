import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # Apart from 0003_project: on PostgreSQL a table cannot be altered in the transaction that updated
    # its rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("rubrics", "0003_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="rubric",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
    ]
