"""AgentTrace.ledger_units: how many ingestion ledger units are counted as stored for each trace, so
retention can move exactly those to `dropped: expired` when it deletes the trace.

For the traces stored before this column the number is an ESTIMATE, made from what the row still
shows (the ledger entries name no trace):
- batch: 1 (exact: a batch trace is one unit);
- REST: 1 (the start) + 1 if an intent is set + tool_call_count + 1 if it was completed (a trace
  closed by the stale reaper, "Abandoned: …", has no completion record). An intent changed several
  times was stored several times and is counted once here, so it can be low;
- OTLP: 1 (the root) + tool_call_count. Other spans stored in the trace (model calls, nested
  agents) left no count on the row, so it can be low.
An estimate that is low leaves a few units `stored` in the ledger once its trace expired; the
traces stored from now on are counted exactly, by the statements that store them.
"""

from django.db import migrations, models
from django.db.models import Case, F, Q, Value, When

# trace_fail_stale's error text: a trace it closed never had a completion record.
_ABANDONED = "Abandoned: no completion"


def estimate(apps, schema_editor):
    AgentTrace = apps.get_model("traces", "AgentTrace")
    one_if = lambda condition: Case(When(condition, then=Value(1)), default=Value(0))  # noqa: E731
    AgentTrace.objects.filter(source="rest").update(
        ledger_units=Value(1)
        + one_if(Q(intent_detected__isnull=False))
        + F("tool_call_count")
        + one_if(~Q(status="active") & ~Q(error__startswith=_ABANDONED))
    )
    AgentTrace.objects.filter(source="otlp", tool_call_count__gt=0).update(ledger_units=Value(1) + F("tool_call_count"))


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0014_ingestionentry_project_required"),
    ]

    operations = [
        # A constant default: PostgreSQL adds the column without rewriting the table; then the REST
        # rows, and the OTLP rows with tool calls, get their estimate (batch rows keep the default).
        migrations.AddField(
            model_name="agenttrace",
            name="ledger_units",
            field=models.PositiveIntegerField(db_default=1, default=1, editable=False),
        ),
        migrations.RunPython(estimate, migrations.RunPython.noop),
    ]
