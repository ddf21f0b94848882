import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # Apart from 0010_project: on PostgreSQL a table cannot be altered in the transaction that updated
    # its rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("queues", "0010_project"),
    ]

    operations = [
        migrations.AlterField(
            model_name="reviewqueue",
            name="project",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="core.project"),
        ),
        migrations.AlterField(
            model_name="reviewqueue",
            name="name",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="reviewqueue",
            constraint=models.UniqueConstraint(fields=("project", "name"), name="queue_name_per_project"),
        ),
    ]
