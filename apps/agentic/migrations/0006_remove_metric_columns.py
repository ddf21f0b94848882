from django.db import migrations, models

METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
STATUSES = [("ok", "Ok"), ("skipped", "Skipped"), ("error", "Error")]


def _remove(name):
    return [
        # A default first, so that on the way back the re-added NOT NULL column has one to fill the
        # existing rows with (SQLite's table rebuild would insert NULL); 0005's reverse overwrites it.
        migrations.AlterField(model_name="agentevaluation", name=f"{name}_status",
                              field=models.CharField(max_length=8, choices=STATUSES, default="skipped")),
        migrations.RemoveField(model_name="agentevaluation", name=name),
        migrations.RemoveField(model_name="agentevaluation", name=f"{name}_reasoning"),
        migrations.RemoveField(model_name="agentevaluation", name=f"{name}_status"),
    ]


class Migration(migrations.Migration):
    """The metric columns go once 0005 copied them into Score rows. On the way back they are re-added
    (existing rows get null, "" and "skipped") and 0005's reverse fills them in."""

    dependencies = [
        ("agentic", "0005_metric_scores"),
    ]

    operations = [op for name in METRICS for op in _remove(name)]
