"""Request and response models of POST /api/v1/metrics-query."""

from typing import Annotated

from pydantic import BaseModel, Field

from apps.core.api.validation import NonBlankText
from apps.nlquery.schemas import MetricsQuery, MetricsQueryResult, QueryError

MAX_QUERY_LENGTH = 1000


class MetricsQueryIn(BaseModel):
    query: Annotated[NonBlankText, Field(max_length=MAX_QUERY_LENGTH, description="A question in plain English.")]


class MetricsQueryStateOut(BaseModel):
    user_query: str
    parsed_query: MetricsQuery | None
    result: MetricsQueryResult | None
    error: QueryError | None
    processing_time_ms: float
