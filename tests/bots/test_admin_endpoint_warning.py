"""Saving a bot in the admin warns when the outbound guard (apps.core.outbound) would refuse its
endpoint: the save happens, and the page says why runs will not reach the bot."""

import pytest

from apps.bots.models import Bot
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory

pytestmark = pytest.mark.django_db
WARNING = "Runs cannot call this bot"


@pytest.fixture
def guard_on(settings):
    # tests/settings.py allows 127.0.0.1 for the fake servers; a real deployment allows nothing by default.
    settings.EVALSITE_OUTBOUND_ALLOW = []


def save(admin_client, bot, **changes):
    url = f"/admin/bots/bot/{bot.pk}/change/"
    data = admin_form_data(admin_client.get(url))
    data.update(changes)
    return admin_client.post(url, data, follow=True)


def messages_of(response) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def test_a_loopback_endpoint_is_saved_with_a_warning(admin_client, guard_on):
    bot = BotFactory(adapter="http", endpoint_url="https://bots.example.org/chat")
    response = save(admin_client, bot, endpoint_url="http://127.0.0.1:9000/chat")
    bot.refresh_from_db()
    assert bot.endpoint_url == "http://127.0.0.1:9000/chat"  # saved all the same
    warnings = [text for level, text in messages_of(response) if level == "warning"]
    assert len(warnings) == 1 and warnings[0].startswith(f"{WARNING} at http://127.0.0.1:9000/chat")
    assert "127.0.0.1 is not allowed" in warnings[0] and "EVALSITE_OUTBOUND_ALLOW" in warnings[0]
    assert WARNING in response.content.decode()  # shown on the page the save lands on


def test_a_private_address_on_a_new_bot_warns_too(admin_client, guard_on):
    response = admin_client.post(
        "/admin/bots/bot/add/",
        {
            "agent_id": "ab" * 12,
            "name": "Intranet bot",
            "adapter": "http",
            "endpoint_url": "http://10.1.2.3/chat",
            "llm_parameters": "{}",
            "harness_context": "{}",
            "tools-TOTAL_FORMS": 0,
            "tools-INITIAL_FORMS": 0,
            "knowledge_bases-TOTAL_FORMS": 0,
            "knowledge_bases-INITIAL_FORMS": 0,
        },
        follow=True,
    )
    assert Bot.objects.filter(name="Intranet bot").exists()
    assert any(level == "warning" and "10.1.2.3 is not allowed" in text for level, text in messages_of(response))


@pytest.mark.parametrize("endpoint_url", ["https://93.184.215.14/chat", "http://127.0.0.1:9000/chat"])
def test_no_warning_where_the_guard_would_call_it(admin_client, settings, endpoint_url):
    # A public address; and loopback once EVALSITE_OUTBOUND_ALLOW lists it.
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    bot = BotFactory(adapter="http", endpoint_url="https://93.184.215.14/old")
    response = save(admin_client, bot, endpoint_url=endpoint_url)
    assert not [text for level, text in messages_of(response) if level == "warning"]


def test_no_warning_for_a_bot_without_an_endpoint(admin_client, guard_on):
    bot = BotFactory(adapter="demo", endpoint_url="")
    response = save(admin_client, bot, name="Renamed")
    assert not [text for level, text in messages_of(response) if level == "warning"]
