import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # Apart from 0004: on PostgreSQL a table cannot be altered in the transaction that updated its
    # rows under a deferred foreign key ("pending trigger events").
    dependencies = [
        ("core", "0004_projects"),
    ]

    operations = [
        migrations.AlterField(
            model_name="apikey",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="api_keys", to="core.project"
            ),
        ),
    ]
