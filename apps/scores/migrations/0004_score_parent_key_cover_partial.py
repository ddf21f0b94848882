"""score_parent_key_cover holds only rows with a parent (a run result's Score rows, parent_id the run):
every read that uses it names the parent, and the agentic and RAG metric rows, which have none, no
longer each write an 11-column entry into it (55 MB per 100,000 agentic evaluations, beside their
102 MB of rows). On PostgreSQL the index is made again on every partition: a large installation
waits for one build over its run results' Score rows."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scores', '0003_score_partitions'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='score',
            name='score_parent_key_cover',
        ),
        migrations.AddIndex(
            model_name='score',
            index=models.Index(condition=models.Q(('parent_id__isnull', False)), fields=['subject_kind', 'parent_id', 'kind', 'key', 'subject_id', 'position', 'status', 'source', 'passed', 'value', 'severity'], name='score_parent_key_cover'),
        ),
    ]
