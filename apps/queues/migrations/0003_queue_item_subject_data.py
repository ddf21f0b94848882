"""Fills each queue item's subject (kind + id) from the foreign key its queue's kind used, and back."""

from django.db import migrations
from django.db.models import F

# The foreign key that held each kind of subject before issue 22.
TARGET_FIELD = {"run_result": "result_id", "agentic_evaluation": "agent_evaluation_id",
                "rag_evaluation": "rag_evaluation_id"}


def subjects_from_targets(apps, schema_editor):
    QueueItem = apps.get_model("queues", "QueueItem")
    # One UPDATE per kind, whatever the number of items: the id is the column it was.
    for kind, field in TARGET_FIELD.items():
        QueueItem.objects.filter(**{f"{field}__isnull": False}).update(
            subject_kind=kind, subject_id=F(field))


def targets_from_subjects(apps, schema_editor):
    QueueItem = apps.get_model("queues", "QueueItem")
    for kind, field in TARGET_FIELD.items():
        QueueItem.objects.filter(subject_kind=kind).update(**{field: F("subject_id")})


class Migration(migrations.Migration):

    dependencies = [("queues", "0002_queue_item_subject")]

    operations = [migrations.RunPython(subjects_from_targets, targets_from_subjects)]
