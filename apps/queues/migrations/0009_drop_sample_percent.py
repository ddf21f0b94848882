from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):

    dependencies = [("queues", "0008_sample_rate_data")]

    operations = [
        migrations.RemoveField(model_name="reviewqueue", name="sample_percent"),
        migrations.AddConstraint(model_name="reviewqueue", constraint=models.CheckConstraint(
            condition=Q(sample_rate__gte=0) & Q(sample_rate__lte=1), name="queue_sample_rate_range")),
    ]
