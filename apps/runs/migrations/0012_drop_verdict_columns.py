from django.db import migrations


class Migration(migrations.Migration):
    """Schema, after the verdicts moved to Score rows (0011): the JSON columns and VerdictReview go,
    so there is one truth. Backwards they come back empty, and 0011's reverse fills them."""

    dependencies = [
        ('runs', '0011_verdicts_to_scores'),
    ]

    operations = [
        migrations.RemoveField(model_name='evaluationresult', name='criteria_scores'),
        migrations.RemoveField(model_name='evaluationresult', name='rubric_scores'),
        migrations.RemoveField(model_name='evaluationresult', name='scores'),
        migrations.DeleteModel(name='VerdictReview'),
    ]
