import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # Apart from 0004_project: on PostgreSQL a table cannot be altered in the transaction that updated
    # its rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("testsets", "0004_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="testset",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
        migrations.AlterField(
            model_name="dataset",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
    ]
