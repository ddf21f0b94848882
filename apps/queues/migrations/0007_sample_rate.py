"""A queue's random sample becomes a 0..1 rate, the unit online evaluation rules use (issue 22).
Three migrations, so that no table is altered after rows of it were updated in one transaction
(PostgreSQL refuses an ALTER TABLE with pending trigger events): columns, data, columns."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("queues", "0006_delete_metricreview")]

    operations = [
        migrations.RemoveConstraint(model_name="reviewqueue", name="queue_sample_percent_range"),
        migrations.AddField(model_name="reviewqueue", name="sample_rate", field=models.FloatField(
            default=0.0, help_text="Share of every object sampled into the queue, 0..1.")),
    ]
