"""Bot secrets: a changed address or adapter drops the stored secret (issue 12, item 3), secrets are
encrypted at rest and can be re-encrypted under a new key."""

import logging

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import connection

from apps.bots.models import Bot
from apps.core.auth import crypto
from apps.runs.sources import bot_spec
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory
from tests.bots.helpers import create_bot, run_against
from tests.fakes.bot_server import FakeBotServer


@pytest.mark.django_db
class TestSecretFollowsTheAddress:
    def test_changing_the_endpoint_drops_the_stored_secret(self, api):
        with FakeBotServer() as honest, FakeBotServer() as attacker:
            agent_id = create_bot(api, adapter="http", endpoint_url=honest.url, secret="bot-secret-1")
            bot = api.get(f"/api/v1/bots/{agent_id}").json()
            changed = api.put(
                f"/api/v1/bots/{agent_id}",
                {"name": bot["name"], "adapter": "http", "endpoint_url": attacker.url},
                format="json",
            )
            assert changed.status_code == 200 and changed.json()["has_secret"] is False
            run_against(api, agent_id)
        assert attacker.auth_headers and "Bearer bot-secret-1" not in attacker.auth_headers

    def test_changing_the_adapter_drops_the_stored_secret(self, api):
        with FakeBotServer() as bot_server:
            agent_id = create_bot(api, adapter="http", endpoint_url=bot_server.url, secret="bot-secret-1")
            changed = api.put(
                f"/api/v1/bots/{agent_id}",
                {"name": "x", "adapter": "openai", "endpoint_url": bot_server.url},
                format="json",
            )
        assert changed.json()["has_secret"] is False

    def test_a_secret_sent_again_with_the_new_endpoint_is_kept(self, api):
        with FakeBotServer() as honest, FakeBotServer() as moved:
            agent_id = create_bot(api, adapter="http", endpoint_url=honest.url, secret="bot-secret-1")
            changed = api.put(
                f"/api/v1/bots/{agent_id}",
                {"name": "x", "adapter": "http", "endpoint_url": moved.url, "secret": "bot-secret-2"},
                format="json",
            )
            assert changed.json()["has_secret"] is True
            run_against(api, agent_id)
        assert moved.auth_headers == ["Bearer bot-secret-2"]

    def test_an_unchanged_endpoint_keeps_the_secret(self, api):
        with FakeBotServer() as bot_server:
            agent_id = create_bot(api, adapter="http", endpoint_url=bot_server.url, secret="bot-secret-1")
            changed = api.put(
                f"/api/v1/bots/{agent_id}",
                {"name": "renamed", "adapter": "http", "endpoint_url": bot_server.url},
                format="json",
            )
            assert changed.json()["has_secret"] is True
            run_against(api, agent_id)
        assert bot_server.auth_headers == ["Bearer bot-secret-1"]


@pytest.mark.django_db
class TestAdminForm:
    def test_changing_the_endpoint_drops_the_secret_unless_entered_again(self, admin_client):
        bot = BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat")
        bot.secret = "admin-secret"
        bot.save()
        url = f"/admin/bots/bot/{bot.pk}/change/"
        data = admin_form_data(admin_client.get(url))
        data["endpoint_url"] = "https://attacker.example.net/steal"
        assert admin_client.post(url, data).status_code == 302
        bot.refresh_from_db()
        assert bot.endpoint_url == "https://attacker.example.net/steal" and not bot.has_secret

        bot.secret = "admin-secret"
        bot.save()
        data = admin_form_data(admin_client.get(url))
        data["adapter"], data["secret"] = "openai", "new-secret"
        assert admin_client.post(url, data).status_code == 302
        bot.refresh_from_db()
        assert bot.adapter == "openai" and bot.secret == "new-secret"

    def test_an_unchanged_address_keeps_the_secret(self, admin_client):
        bot = BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat")
        bot.secret = "admin-secret"
        bot.save()
        url = f"/admin/bots/bot/{bot.pk}/change/"
        data = admin_form_data(admin_client.get(url))
        data["name"] = "Renamed"
        admin_client.post(url, data)
        bot.refresh_from_db()
        assert bot.name == "Renamed" and bot.secret == "admin-secret"


def _stored_column(bot: Bot) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT encrypted_secret FROM bots_bot WHERE id = %s", [bot.pk])
        return cursor.fetchone()[0]


@pytest.mark.django_db
class TestEncryptionAtRest:
    def test_the_database_holds_a_token_not_the_secret(self, api):
        agent_id = create_bot(
            api, adapter="http", endpoint_url="https://bots.example.com/chat", secret="sk-plaintext-123"
        )
        bot = Bot.objects.get(agent_id=agent_id)
        stored = _stored_column(bot)
        assert "sk-plaintext-123" not in stored and stored.startswith("gAAAA")
        assert bot.secret == "sk-plaintext-123" and bot_spec(agent_id, project=bot.project).secret == "sk-plaintext-123"

    def test_the_secret_appears_in_no_repr_str_or_log(self, caplog):
        caplog.set_level(logging.DEBUG)
        bot = BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat")
        bot.secret = "sk-plaintext-123"
        bot.save()
        spec = bot_spec(bot.agent_id, project=bot.project)
        logging.getLogger("test").info("bot %r %s spec %r", bot, bot, spec)
        for text in (repr(bot), str(bot), repr(spec), caplog.text):
            assert "sk-plaintext-123" not in text and bot.encrypted_secret not in text

    def test_explicit_keys_first_encrypts_all_decrypt(self, settings):
        old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
        settings.EVALSITE_SECRET_KEY_ENCRYPTION = [old]
        token = crypto.encrypt("s")
        settings.EVALSITE_SECRET_KEY_ENCRYPTION = [new, old]
        assert crypto.decrypt(token) == "s"
        assert Fernet(new.encode()).decrypt(crypto.encrypt("t").encode()) == b"t"

    def test_without_keys_the_key_is_derived_from_secret_key(self, settings):
        settings.EVALSITE_SECRET_KEY_ENCRYPTION = []
        token = crypto.encrypt("s")
        assert Fernet(crypto.derived_key(settings.SECRET_KEY)).decrypt(token.encode()) == b"s"
        settings.SECRET_KEY = "another-secret-key"
        with pytest.raises(crypto.SecretUnreadable) as err:
            crypto.decrypt(token)
        assert token not in str(err.value)

    def test_a_bad_key_is_named_by_position_not_value(self, settings):
        from django.core.exceptions import ImproperlyConfigured

        settings.EVALSITE_SECRET_KEY_ENCRYPTION = [Fernet.generate_key().decode(), "not-a-key-hunter2"]
        with pytest.raises(ImproperlyConfigured, match="entry 2 is not a Fernet key") as err:
            crypto.encrypt("s")
        assert "hunter2" not in str(err.value)

    def test_an_unreadable_secret_stops_a_run_with_a_clear_error(self, api, settings):
        agent_id = create_bot(api, adapter="http", endpoint_url="https://bots.example.com/chat", secret="s")
        settings.EVALSITE_SECRET_KEY_ENCRYPTION = [Fernet.generate_key().decode()]
        created = api.post("/api/v1/test-sets", {"agent_id": agent_id, "name": "t", "items": []}, format="json")
        response = api.post(
            "/api/v1/runs", {"agent_id": agent_id, "test_set_id": created.json()["test_set_id"]}, format="json"
        )
        assert response.status_code == 409 and "cannot be decrypted" in response.json()["detail"]


@pytest.mark.django_db
def test_rotate_bot_secrets_reencrypts_under_the_new_key(settings, capsys):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [old]
    bots = [BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat") for _ in range(2)]
    for i, bot in enumerate(bots):
        bot.secret = f"secret-{i}"
        bot.save()
    BotFactory()  # no secret: left alone

    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [new, old]
    call_command("rotate_bot_secrets")
    assert "re-encrypted 2 bot secret(s)" in capsys.readouterr().out

    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [new]
    assert [Bot.objects.get(pk=b.pk).secret for b in bots] == ["secret-0", "secret-1"]
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [old]
    for bot in bots:
        with pytest.raises(crypto.SecretUnreadable):
            _ = Bot.objects.get(pk=bot.pk).secret


@pytest.mark.django_db
def test_rotate_moves_off_the_derived_key(settings):
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = []
    bot = BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat")
    bot.secret = "derived-era"
    bot.save()
    new = Fernet.generate_key().decode()
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [new, crypto.DERIVED_KEY_ENTRY]
    call_command("rotate_bot_secrets")
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [new]
    assert Bot.objects.get(pk=bot.pk).secret == "derived-era"


@pytest.mark.django_db
def test_rotate_names_bots_it_cannot_decrypt(settings):
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [Fernet.generate_key().decode()]
    bot = BotFactory(adapter="http", endpoint_url="https://bots.example.com/chat")
    bot.secret = "lost"
    bot.save()
    settings.EVALSITE_SECRET_KEY_ENCRYPTION = [Fernet.generate_key().decode()]
    with pytest.raises(CommandError, match=bot.agent_id):
        call_command("rotate_bot_secrets")


# transaction=True: migrating back and forth rewrites the bots table, which SQLite's schema editor
# refuses to do inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_the_migration_encrypts_existing_plaintext_secrets():
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("bots", "0001_initial")], [("bots", "0002_encrypt_bot_secrets")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old_bot = executor.loader.project_state(before).apps.get_model("bots", "Bot")
        old_bot.objects.create(
            agent_id="b" * 24,
            name="old",
            adapter="http",
            endpoint_url="https://x.example/",
            secret="plain-before-upgrade",
        )
        old_bot.objects.create(agent_id="c" * 24, name="none", adapter="demo")
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        # The bot as that migration left it (today's model has columns added since).
        upgraded_bot = executor.loader.project_state(after).apps.get_model("bots", "Bot")
        upgraded = upgraded_bot.objects.get(agent_id="b" * 24)
        assert "plain-before-upgrade" not in _stored_column(upgraded)
        assert crypto.decrypt(upgraded.encrypted_secret) == "plain-before-upgrade"
        assert not upgraded_bot.objects.get(agent_id="c" * 24).encrypted_secret
    finally:
        # Back to the latest schema: going back to bots 0001 also took back what depends on bots
        # 0003 (testsets 0002 and 0003), which migrating forward to bots 0002 alone leaves unapplied,
        # and the tests after this one (the transactional ones, live servers) need.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
