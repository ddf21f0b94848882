"""Ragas, loaded once per process, and the adapters that let its LLM metrics use evalsite's client.

Nothing here downloads anything: the metrics used offline (ID-based context recall / precision,
Levenshtein string similarity) need no model, and the LLM metrics talk to the configured
OpenAI-compatible server only, through apps.core.llm.client (its retries, timeouts, json_schema fallback
and token usage), by way of the two small adapter classes below. Ragas' own llm_factory is not used:
its instructor client needs an AsyncOpenAI client and tool calling, which many local servers lack.
Ragas' usage analytics are switched off before it is imported.
"""

import asyncio
import contextvars
import math
import os
import threading
import warnings
from dataclasses import dataclass, field
from functools import cache

from django.conf import settings

from apps.core.llm import client as llm

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

_lock = threading.Lock()
_loops = threading.local()


def run(coro):
    """Run a coroutine on this thread's own event loop, created once: ragas metrics are async."""
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = asyncio.new_event_loop()
    return loop.run_until_complete(coro)


_offline = None


def ragas_offline() -> "_Offline":
    """The offline Ragas metric objects, imported and built on first use, then kept."""
    global _offline
    if _offline is None:
        with _lock:
            if _offline is None:
                _offline = _build_offline()
    return _offline


def _build_offline() -> "_Offline":
    with warnings.catch_warnings():
        # 0.4 deprecates these imports in favour of ragas.metrics.collections, which has no ID-based metrics.
        warnings.simplefilter("ignore", DeprecationWarning)
        # Ragas is imported on first use: it is heavy, and only the TRACE metrics need it.
        from ragas.dataset_schema import SingleTurnSample
        from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall, NonLLMStringSimilarity
    return _Offline(SingleTurnSample, IDBasedContextRecall(), IDBasedContextPrecision(), NonLLMStringSimilarity())


@dataclass(frozen=True)
class _Offline:
    sample_class: type
    context_recall: object
    context_precision: object
    string_similarity: object


async def id_based_context_recall(*, retrieved_ids: list[str], reference_ids: list[str]) -> float:
    ragas = ragas_offline()
    sample = ragas.sample_class(retrieved_context_ids=retrieved_ids, reference_context_ids=reference_ids)
    return float(await ragas.context_recall.single_turn_ascore(sample))


async def id_based_context_precision(*, retrieved_ids: list[str], reference_ids: list[str]) -> float:
    ragas = ragas_offline()
    sample = ragas.sample_class(retrieved_context_ids=retrieved_ids, reference_context_ids=reference_ids)
    return float(await ragas.context_precision.single_turn_ascore(sample))


async def string_similarity(*, response: str, reference: str) -> float:
    ragas = ragas_offline()
    sample = ragas.sample_class(response=response, reference=reference)
    return float(await ragas.string_similarity.single_turn_ascore(sample))


# --- LLM metrics -------------------------------------------------------------------------------


@dataclass
class LLMCallLog:
    """What one metric's LLM calls cost and answered, for its details."""

    usage: llm.LLMUsage = field(default_factory=llm.LLMUsage)
    calls: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


_call_log: contextvars.ContextVar[LLMCallLog | None] = contextvars.ContextVar("trace_llm_call_log", default=None)

RAGAS_SYSTEM = "You are an evaluation judge. Follow the instructions and answer with the requested JSON only."


@cache
def _adapter_classes():
    # Lazy like every ragas import here (heavy, needed only once an LLM metric runs).
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import InstructorBaseRagasLLM

    class EvalsiteRagasLLM(InstructorBaseRagasLLM):
        """Ragas' structured-output LLM interface on top of evalsite's LLM client."""

        def __init__(self, client: llm.LLMClient):
            self.client = client

        def generate(self, prompt, response_model):
            log = _call_log.get()
            try:
                result = self.client.complete_structured(
                    system=RAGAS_SYSTEM, user=prompt, response_model=response_model, name=response_model.__name__
                )
            except llm.LLMError as exc:
                if log is not None:
                    log.errors.append(exc.reason)
                raise
            if log is not None:
                log.usage.prompt_tokens += result.usage.prompt_tokens
                log.usage.completion_tokens += result.usage.completion_tokens
                log.usage.total_tokens += result.usage.total_tokens
                log.calls.append({"output": response_model.__name__, "reply": result.data.model_dump(mode="json")})
            return result.data

        async def agenerate(self, prompt, response_model):
            return await asyncio.to_thread(self.generate, prompt, response_model)

    class EvalsiteRagasEmbeddings(BaseRagasEmbedding):
        def __init__(self, client: llm.LLMClient):
            super().__init__()
            self.client = client

        def embed_text(self, text, **kwargs):
            return self.client.embed([text])[0]

        def embed_texts(self, texts, **kwargs):
            return self.client.embed(list(texts))

        async def aembed_text(self, text, **kwargs):
            return await asyncio.to_thread(self.embed_text, text)

        async def aembed_texts(self, texts, **kwargs):
            return await asyncio.to_thread(self.embed_texts, texts)

    return EvalsiteRagasLLM, EvalsiteRagasEmbeddings


@dataclass(frozen=True)
class LLMMetrics:
    judge: str
    answer_accuracy: object
    faithfulness: object
    answer_relevancy: object
    context_utilisation: object


_llm_metrics: dict[tuple, LLMMetrics] = {}


def llm_metrics() -> LLMMetrics:
    """Ragas' LLM metrics bound to the configured judge, built once per (server, model, embedding model)."""
    client = llm.get_llm_client()
    key = (client.base_url, client.model, settings.EVALSITE_EMBEDDING_MODEL, id(client.openai_client()))
    with _lock:
        metrics = _llm_metrics.get(key)
        if metrics is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                # Lazy: ragas is heavy, and these are needed only once an LLM metric runs.
                from ragas.metrics.collections import AnswerAccuracy, AnswerRelevancy, ContextUtilization, Faithfulness
            llm_class, embeddings_class = _adapter_classes()
            ragas_llm = llm_class(client)
            # Our client already retries transport errors and bad replies; Ragas' own retries would multiply them.
            metrics = LLMMetrics(
                judge=client.judge_label,
                answer_accuracy=AnswerAccuracy(llm=ragas_llm, max_retries=1),
                faithfulness=Faithfulness(llm=ragas_llm),
                answer_relevancy=AnswerRelevancy(llm=ragas_llm, embeddings=embeddings_class(client)),
                context_utilisation=ContextUtilization(llm=ragas_llm),
            )
            _llm_metrics[key] = metrics
        return metrics


def reset_llm_metrics() -> None:
    with _lock:
        _llm_metrics.clear()


async def with_call_log(coro) -> tuple[float, LLMCallLog]:
    """Await a Ragas LLM metric with a fresh call log; NaN (Ragas' "could not score") becomes an error."""
    log = LLMCallLog()
    token = _call_log.set(log)
    try:
        result = await coro
    finally:
        _call_log.reset(token)
    value = float(result.value) if result.value is not None else math.nan
    return value, log
