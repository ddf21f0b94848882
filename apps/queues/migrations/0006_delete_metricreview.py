"""Human metric reviews are Score rows now (0005 moved them)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [("queues", "0005_metric_reviews_to_scores")]

    operations = [migrations.DeleteModel(name="MetricReview")]
