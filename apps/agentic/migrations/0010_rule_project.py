import django.db.models.deletion
from django.db import migrations, models

import apps.core.models
from apps.core.projects.backfill import fill_with_default_project


def _project_field():
    return models.ForeignKey(
        db_index=False,
        default=apps.core.models.default_project_id,
        null=True,
        on_delete=django.db.models.deletion.PROTECT,
        related_name="+",
        to="core.project",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("agentic", "0009_evaluation_project_required"),
    ]

    operations = [
        migrations.AddField(model_name="evaluationrule", name="project", field=_project_field()),
        migrations.AddField(model_name="onlineevaluationcount", name="project", field=_project_field()),
        migrations.RunPython(
            fill_with_default_project("agentic", "EvaluationRule", "OnlineEvaluationCount"), migrations.RunPython.noop
        ),
    ]
