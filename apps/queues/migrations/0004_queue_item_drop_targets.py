"""The three nullable foreign keys go: an item is its subject's kind + id (filled by 0003)."""

from django.db import migrations, models

SUBJECT_KINDS = [("run_result", "Run result"), ("trace", "Trace"), ("agentic_evaluation", "Agentic evaluation"),
                 ("rag_evaluation", "RAG evaluation")]


class Migration(migrations.Migration):

    dependencies = [("queues", "0003_queue_item_subject_data")]

    operations = [
        migrations.RemoveField(model_name="queueitem", name="result"),
        migrations.RemoveField(model_name="queueitem", name="agent_evaluation"),
        migrations.RemoveField(model_name="queueitem", name="rag_evaluation"),
        migrations.AlterField(model_name="queueitem", name="subject_kind",
                              field=models.CharField(choices=SUBJECT_KINDS, max_length=24)),
        migrations.AlterField(model_name="queueitem", name="subject_id", field=models.BigIntegerField()),
        migrations.AddConstraint(
            model_name="queueitem",
            constraint=models.UniqueConstraint(fields=("queue", "subject_kind", "subject_id"),
                                               name="queue_item_subject_once")),
        migrations.AddIndex(model_name="queueitem",
                            index=models.Index(fields=["subject_kind", "subject_id"], name="queue_item_subject")),
    ]
