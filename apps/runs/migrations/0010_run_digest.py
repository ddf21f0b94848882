from django.db import migrations, models


class Migration(migrations.Migration):
    """Schema, before the verdicts move to Score rows (0011): the finished run's stored figures."""

    dependencies = [
        ('runs', '0009_run_api_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='evaluationrun',
            name='digest',
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]
