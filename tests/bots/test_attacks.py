"""The attacks of issue 12 (items 1-3), made the way a non-staff API key would make them: create a
bot over the API, run a test set against it, and look at what the listener received."""

import pytest

from tests.bots.helpers import create_bot, run_against
from tests.fakes.bot_server import FakeBotServer
from tests.fakes.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.django_db


def test_platform_openai_key_never_goes_to_a_bot_supplied_url(api, openai_server):
    # openai_server is the platform's configured server (OPENAI_API_KEY=test-key); the attacker
    # listens on another port and names it as the bot's endpoint, with no secret of its own.
    listener = ScriptedOpenAIServer().start()
    try:
        agent_id = create_bot(api, adapter="openai", endpoint_url=listener.url)
        results = run_against(api, agent_id)
    finally:
        listener.stop()
    assert all(h.get("Authorization") != "Bearer test-key" for h in listener.headers)
    assert listener.requests == []
    assert "needs its own secret" in results[0]["error"]


def test_bot_at_a_loopback_address_is_refused_and_receives_nothing(api, settings):
    settings.EVALSITE_OUTBOUND_ALLOW = []
    with FakeBotServer() as internal:
        agent_id = create_bot(api, adapter="http", endpoint_url=internal.url)
        results = run_against(api, agent_id)
    assert internal.requests == []
    assert "not allowed" in results[0]["error"] and "127.0.0.1" in results[0]["error"]


def test_an_internal_service_error_page_is_not_copied_into_the_result(api):
    with FakeBotServer(lambda r: (500, "internal-only: db password hunter2")) as internal:
        agent_id = create_bot(api, adapter="http", endpoint_url=internal.url)
        results = run_against(api, agent_id)
    error = results[0]["error"]
    assert "HTTP 500" in error and "application/json" in error and "bytes" in error
    assert "hunter2" not in error and "internal-only" not in error
