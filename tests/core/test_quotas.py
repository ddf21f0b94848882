"""Quotas (issue 21): LLM-spending requests are rate-limited per key (429 with Retry-After), the
counters are exact across processes on the embedded default and on Redis, and each key's LLM calls
and tokens per day are recorded where the platform makes them and shown in the admin."""

import multiprocessing
import os
import subprocess
import sys
import threading
import types
from datetime import date
from pathlib import Path

import pytest
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from apps.core.llm.quota_cache import LockedFileBasedCache
from apps.core.llm.quotas import rate_hit
from apps.core.llm.usage import key_usage_add
from apps.core.models import KeyUsageDay
from tests.core.factories import ApiKeyFactory, UserFactory, client_with_key
from tests.rag.helpers import PARIS
from tests.rag.helpers import post as post_trace

pytestmark = pytest.mark.django_db

MANUAL = "/api/v1/metrics/evaluate/manual"
BODY = {"user_query": "List clusters", "agent_response": "prod-01", "tool_calls": []}
GRADE = {"explanation": "fine", "score": 4}


@pytest.fixture
def llm(openai_server):
    openai_server.default = GRADE
    return openai_server


def test_a_burst_of_llm_evaluations_is_answered_429_with_retry_after(default_key_api, llm, settings, monkeypatch):
    settings.EVALSITE_LLM_RATE = "3/min"
    # The limit counts calendar minutes: on a busy machine the four requests could straddle one and
    # the fourth open a new window. The limiter's clock stands 30 s into a minute for the whole test.
    from apps.core.llm import quotas

    monkeypatch.setattr(quotas, "time", types.SimpleNamespace(time=lambda: 1_800_000_030.0))
    for _ in range(3):
        assert default_key_api.post(MANUAL, {**BODY, "judge": "llm"}, format="json").status_code == 200
    spent = len(llm.chat_requests)
    refused = default_key_api.post(MANUAL, {**BODY, "judge": "llm"}, format="json")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "EVALSITE_LLM_RATE" in refused.json()["detail"] and "3 per minute" in refused.json()["detail"]
    # Refused before judging: no platform LLM call was made for it.
    assert len(llm.chat_requests) == spent
    # The heuristic judge spends nothing and is not limited; another key has its own allowance.
    assert default_key_api.post(MANUAL, {**BODY, "judge": "heuristic"}, format="json").status_code == 200
    other = client_with_key(ApiKeyFactory())
    assert other.post(MANUAL, {**BODY, "judge": "llm"}, format="json").status_code == 200


def test_without_an_llm_the_default_judge_spends_nothing_and_is_not_limited(default_key_api, settings):
    settings.EVALSITE_LLM_RATE = "1/min"
    for _ in range(3):
        assert default_key_api.post(MANUAL, BODY, format="json").status_code == 200


def test_off_turns_the_rate_limit_off(default_key_api, llm, settings):
    settings.EVALSITE_LLM_RATE = "off"
    for _ in range(4):
        assert default_key_api.post(MANUAL, {**BODY, "judge": "llm"}, format="json").status_code == 200


def _trace(client):
    return post_trace(client, PARIS)


def _nlquery(client):
    return client.post("/api/v1/metrics-query", {"query": "error rate of the api over the last hour"}, format="json")


def _session(client):
    return client.post("/api/v1/metrics/evaluate/session", {"session_id": "nope", "judge": "llm"}, format="json")


@pytest.mark.parametrize("spend", [_trace, _nlquery, _session], ids=["trace", "metrics-query", "evaluate-session"])
def test_every_llm_spending_endpoint_counts_against_the_key(default_key_api, llm, settings, spend):
    settings.EVALSITE_LLM_RATE = "2/hour"
    for _ in range(2):
        assert spend(default_key_api).status_code != 429
    refused = spend(default_key_api)
    assert refused.status_code == 429, refused.content
    assert int(refused["Retry-After"]) >= 1 and "detail" in refused.json()


def test_a_run_launched_with_the_llm_judge_counts(api, llm, settings):
    from tests.bots.factories import BotFactory
    from tests.testsets.factories import SuiteFactory

    settings.EVALSITE_LLM_RATE = "1/day"
    suite = SuiteFactory(bot=BotFactory())
    body = {"agent_id": suite.bot.agent_id, "test_set_id": str(suite.pk)}
    with TestCase.captureOnCommitCallbacks(execute=False):
        assert api.post("/api/v1/runs", body, format="json").status_code == 201
        # The heuristic judge spends nothing: not counted, not refused.
        assert api.post("/api/v1/runs", {**body, "judge_model": "heuristic"}, format="json").status_code == 201
        refused = api.post("/api/v1/runs", body, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1


# --- the counters ---------------------------------------------------------------------------------


def _count_in_child(directory: str, key: str, hits: int, queue) -> None:
    cache = LockedFileBasedCache(directory, {})
    queue.put([rate_hit(cache, key, 60) for _ in range(hits)])


def test_the_embedded_counter_is_exact_across_processes(tmp_path):
    # Four processes count one key at once, as four web workers would: every hit gets its own number.
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_count_in_child, args=(str(tmp_path), "k", 50, queue)) for _ in range(4)]
    for worker in workers:
        worker.start()
    seen = sorted(n for _ in workers for n in queue.get(timeout=60))
    for worker in workers:
        worker.join(timeout=60)
    assert seen == list(range(1, 201))
    assert LockedFileBasedCache(str(tmp_path), {}).get("k") == 200


def test_the_embedded_counter_expires_with_its_window(tmp_path):
    cache = LockedFileBasedCache(str(tmp_path), {})
    assert [rate_hit(cache, "w", 0.2) for _ in range(3)] == [1, 2, 3]
    import time

    time.sleep(0.3)
    assert rate_hit(cache, "w", 0.2) == 1


def test_the_redis_counter_is_exact_across_threads():
    from django.core.cache.backends.redis import RedisCache

    url = os.environ.get("EVALSITE_TEST_REDIS_URL", "redis://127.0.0.1:6379/4")
    cache = RedisCache(url, {"KEY_PREFIX": f"evalsite-test-{os.getpid()}"})
    try:
        cache.delete("k")
    except Exception:
        pytest.skip(f"no Redis at {url}")
    seen = []
    lock = threading.Lock()

    def count():
        numbers = [rate_hit(cache, "k", 60) for _ in range(50)]
        with lock:
            seen.extend(numbers)

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.delete("k")
    assert sorted(seen) == list(range(1, 201))


# --- usage per key and day ------------------------------------------------------------------------


def test_each_keys_llm_calls_and_tokens_are_recorded_per_day(default_key_api, llm):
    assert default_key_api.post(MANUAL, {**BODY, "judge": "llm"}, format="json").status_code == 200
    assert default_key_api.post(MANUAL, {**BODY, "judge": "llm"}, format="json").status_code == 200
    usage = KeyUsageDay.objects.get()
    # One request per metric judged (tool_call_accuracy is skipped without tool calls, asking
    # nothing); the fake server bills 11 tokens in and 7 out per request.
    calls = len(llm.chat_requests)
    assert calls == 4
    assert (usage.llm_calls, usage.input_tokens, usage.output_tokens) == (calls, 11 * calls, 7 * calls)
    assert usage.day == timezone.now().date()
    assert usage.api_key.prefix == default_key_api.raw_key[: len(usage.api_key.prefix)]


def test_a_parallel_batch_is_recorded_against_its_key(default_key_api, llm, settings):
    from tests.traces.factories import AgentTraceFactory

    settings.EVALSITE_AGENTIC_BATCH_CONCURRENCY = 4
    for n in range(3):
        AgentTraceFactory(session_id=f"s{n}")
    response = default_key_api.post(
        "/api/v1/metrics/evaluate/batch", {"session_ids": ["s0", "s1", "s2"], "judge": "llm"}, format="json"
    )
    assert response.status_code == 200, response.content
    # Judged in a thread pool, away from the request's own thread: still this key's.
    assert KeyUsageDay.objects.get().llm_calls == 9 == len(llm.chat_requests)


def test_heuristic_work_and_other_keys_record_nothing(default_key_api, llm):
    assert default_key_api.post(MANUAL, {**BODY, "judge": "heuristic"}, format="json").status_code == 200
    assert not KeyUsageDay.objects.exists()


def test_concurrent_additions_are_all_counted(on_postgres, transactional_db):
    key = ApiKeyFactory()
    today = date(2026, 11, 25)

    def add():
        from django.db import connection

        try:
            for _ in range(20):
                key_usage_add(api_key_id=key.pk, day=today, llm_calls=1, input_tokens=10, output_tokens=2)
        finally:
            connection.close()

    threads = [threading.Thread(target=add) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    row = KeyUsageDay.objects.get(api_key=key, day=today)
    assert (row.llm_calls, row.input_tokens, row.output_tokens) == (120, 1200, 240)


def test_the_admin_lists_usage_read_only_and_filters_by_day_and_key(client):
    staff = UserFactory(username="admin", is_staff=True, is_superuser=True)
    client.force_login(staff)
    first, second = ApiKeyFactory(name="first"), ApiKeyFactory(name="second")
    key_usage_add(api_key_id=first.pk, day=date(2026, 11, 24), llm_calls=3, input_tokens=30, output_tokens=9)
    key_usage_add(api_key_id=second.pk, day=date(2026, 11, 25), llm_calls=5, input_tokens=50, output_tokens=15)
    url = reverse("admin:core_keyusageday_changelist")

    def listed(**params):
        page = client.get(url, params)
        assert page.status_code == 200
        return [(row.api_key.name, row.llm_calls) for row in page.context["cl"].result_list]

    assert listed() == [("second", 5), ("first", 3)]
    assert first.prefix in client.get(url).content.decode()
    assert listed(day="2026-11-25") == [("second", 5)]
    assert listed(api_key__id__exact=first.pk) == [("first", 3)]
    row = KeyUsageDay.objects.get(api_key=first)
    assert client.get(reverse("admin:core_keyusageday_add")).status_code == 403
    change = client.post(reverse("admin:core_keyusageday_change", args=[row.pk]), {"llm_calls": 0})
    row.refresh_from_db()
    assert row.llm_calls == 3 and change.status_code in (200, 403)


# --- judge models ---------------------------------------------------------------------------------


def test_an_evaluation_rule_may_only_name_an_allowed_model(staff_api, llm, settings):
    settings.EVALSITE_JUDGE_MODELS = ["llama3.1:8b"]
    body = {"name": "r", "agent_name": "OrchestratorAgent", "source": "rest", "sample_rate": 0.25}
    refused = staff_api.post("/api/v1/evaluation-rules", {**body, "judge": "gpt-4o"}, format="json")
    assert refused.status_code == 422 and "judge-model, llama3.1:8b" in refused.json()["detail"]
    assert (
        staff_api.post("/api/v1/evaluation-rules", {**body, "judge": "llama3.1:8b"}, format="json").status_code == 201
    )


# --- settings -------------------------------------------------------------------------------------


def _settings(tmp_path, **env) -> subprocess.CompletedProcess:

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSITE_", "DJANGO_SETTINGS"))}
    clean.update({"EVALSITE_VAR_DIR": str(tmp_path), "SECRET_KEY": "x", **env})
    code = (
        "import evalsite.settings as s; q = s.CACHES['quotas']; "
        "print(q['BACKEND'], q['LOCATION'], s.EVALSITE_LLM_RATE, s.EVALSITE_MAX_RUN_ATTEMPTS, "
        "s.EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST, s.EVALSITE_JUDGE_MODELS)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=clean, capture_output=True, text=True
    )


@pytest.mark.subprocess
def test_the_defaults_and_a_redis_store(tmp_path):
    default = _settings(tmp_path)
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == [
        "apps.core.llm.quota_cache.LockedFileBasedCache",
        str(tmp_path / "cache" / "quotas"),
        "60/min",
        "20000",
        "100",
        "[]",
    ]
    redis = _settings(
        tmp_path, EVALSITE_RATE_LIMIT_CACHE_URL="redis://127.0.0.1:6379/4", EVALSITE_JUDGE_MODELS="gpt-4o, llama3.1:8b"
    )
    assert redis.stdout.split()[:2] == ["django.core.cache.backends.redis.RedisCache", "redis://127.0.0.1:6379/4"]
    assert redis.stdout.rstrip().endswith("['gpt-4o', 'llama3.1:8b']")


@pytest.mark.subprocess
@pytest.mark.parametrize("rate", ["60", "sixty/min", "0/min", "60/fortnight"])
def test_a_malformed_rate_refuses_to_start(tmp_path, rate):
    result = _settings(tmp_path, EVALSITE_LLM_RATE=rate)
    assert result.returncode != 0 and "EVALSITE_LLM_RATE" in result.stderr


def test_the_schema_documents_429_where_requests_spend_llm_tokens():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    limited = {
        (path, method)
        for path, item in paths.items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "429" in operation.get("responses", {})
    }
    assert limited == {
        ("/api/v1/metrics/evaluate/session", "post"),
        ("/api/v1/metrics/evaluate/manual", "post"),
        ("/api/v1/metrics/evaluate/batch", "post"),
        ("/api/v1/trace", "post"),
        ("/trace", "post"),
        ("/api/v1/metrics-query", "post"),
        ("/api/v1/runs", "post"),
        ("/api/v1/rubrics/{rubric_id}/alignment-trials", "post"),
        ("/api/v1/metrics/alignment-trials", "post"),
        ("/api/v1/anchors/{anchor_id}/checks", "post"),
    }
