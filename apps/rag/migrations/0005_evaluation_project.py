import django.db.models.deletion
from django.db import migrations, models

import apps.core.models
from apps.core.projects.backfill import fill_with_default_project


class Migration(migrations.Migration):
    dependencies = [
        ("rag", "0004_drop_scores_json_and_test_rows"),
        ("core", "0005_apikey_project_required"),
    ]

    operations = [
        migrations.AddField(
            model_name="traceevaluation",
            name="project",
            field=models.ForeignKey(
                default=apps.core.models.default_project_id,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.project",
            ),
        ),
        migrations.RunPython(fill_with_default_project("rag", "TraceEvaluation"), migrations.RunPython.noop),
    ]
