"""Where a score becomes pass/fail for agreement (apps.scores.agreement's threshold): the human
scores agentic metrics 0..1 and the judge scores every metric 0..1, so agreement compares the two
on the same side of a threshold."""

from apps.agentic.scoring import METRIC_PASS

# The "acceptable" band's floor: a metric scored below it is a failure.
AGENTIC_PASS = METRIC_PASS
# The RAG metrics are ratios where half is the usual cut (as ragas' binary metrics use it).
RAG_PASS = 0.5
