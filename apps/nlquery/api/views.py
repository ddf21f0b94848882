from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import llm_rate_check
from apps.core.projects.resolution import project_of
from apps.nlquery.selectors import metrics_query_answer

from .schemas import MetricsQueryIn, MetricsQueryStateOut


class MetricsQueryView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=["nlquery"],
        request=MetricsQueryIn,
        responses={200: MetricsQueryStateOut},
        summary="Answer a natural-language metrics question",
        description="Runs the metrics_agent node. The answer is the node's state: on success parsed_query "
        "and result (datapoints, statistics, the PromQL that ran), on failure error with error_type, "
        "message and suggestion. Query failures are answers (200), not HTTP errors; an empty query is 422. "
        "evalsite's own metrics (vayu_*, evalsite_*) are read only in the key's project: project=\"<slug>\" "
        "is added to each of their selectors, and the PromQL shown is the scoped one that ran; a project "
        "filter naming another project is an invalid_query answer.",
    )
    def post(self, request):
        body = validate_body(MetricsQueryIn, request.data)
        if llm_configured():  # the question is parsed by the platform's LLM
            llm_rate_check(request, self)
        state = metrics_query_answer(question=body.query, project=project_of(request).slug)
        return respond(MetricsQueryStateOut, state)
