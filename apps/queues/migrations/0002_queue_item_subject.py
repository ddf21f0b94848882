"""Queue items name their subject by kind + id (issue 22). First the new columns, nullable while
0003 fills them; the old targets' constraints go here rather than in 0004, so that going back
re-adds them only after 0003's reverse has filled the foreign keys again."""

from django.db import migrations, models

SUBJECT_KINDS = [("run_result", "Run result"), ("trace", "Trace"), ("agentic_evaluation", "Agentic evaluation"),
                 ("rag_evaluation", "RAG evaluation")]


class Migration(migrations.Migration):

    dependencies = [("queues", "0001_initial")]

    operations = [
        migrations.RemoveConstraint(model_name="queueitem", name="queue_item_one_target"),
        migrations.RemoveConstraint(model_name="queueitem", name="queue_item_result_once"),
        migrations.RemoveConstraint(model_name="queueitem", name="queue_item_agentic_once"),
        migrations.RemoveConstraint(model_name="queueitem", name="queue_item_rag_once"),
        migrations.AddField(model_name="queueitem", name="subject_kind",
                            field=models.CharField(choices=SUBJECT_KINDS, max_length=24, null=True)),
        migrations.AddField(model_name="queueitem", name="subject_id", field=models.BigIntegerField(null=True)),
    ]
