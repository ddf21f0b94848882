"""Reads shared by the API, the page and the benchmark. A metrics question writes nothing: it only
reads the metrics backend."""

from .agent import run_query
from .backends import PrometheusBackend
from .errors import BackendRejected, BackendUnavailable
from .parser import SYNONYMS
from .promql import HISTOGRAM_PART_SUFFIXES
from .schemas import MetricsQueryState

_EVERYDAY_QUESTIONS = (
    ("cpu", "Show CPU usage for the last hour"),
    ("memory", "Peak memory over the past 30 minutes"),
    ("requests", "Total requests in the last 15 minutes"),
    ("open files", "Average open files over the last 6 hours"),
)


def metrics_query_answer(*, question: str, project: str, **configurable) -> MetricsQueryState:
    """The answer to `question` asked in `project` (a slug): evalsite's own metrics are read only
    for that project (apps.nlquery.promql)."""
    return run_query(question, project=project, **configurable)


def example_questions(backend: PrometheusBackend, limit: int = 7) -> list[str]:
    """Questions that work on this backend: built from the metric names it really has."""
    try:
        names = backend.get_available_metrics()
    except (BackendUnavailable, BackendRejected):
        return []
    present = set(names)
    examples = [
        question for phrase, question in _EVERYDAY_QUESTIONS if any(name in present for name in SYNONYMS[phrase])
    ]
    plain = [n for n in names if not n.endswith(HISTOGRAM_PART_SUFFIXES) and n.count("_") >= 1]
    for name in plain[: max(limit - len(examples), 0)]:
        examples.append(f"Show {name} for the last 15 minutes")
    return examples[:limit]
