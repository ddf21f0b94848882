from django.db import migrations
from django.db.models import F


def rate_from_percent(apps, schema_editor):
    apps.get_model("queues", "ReviewQueue").objects.update(sample_rate=F("sample_percent") / 100.0)


def percent_from_rate(apps, schema_editor):
    apps.get_model("queues", "ReviewQueue").objects.update(sample_percent=F("sample_rate") * 100.0)


class Migration(migrations.Migration):

    dependencies = [("queues", "0007_sample_rate")]

    operations = [migrations.RunPython(rate_from_percent, percent_from_rate)]
