from django.apps import AppConfig


class BotsConfig(AppConfig):
    name = "apps.bots"
    label = "bots"
    verbose_name = "Bots under test"

    def ready(self):
        # Every change to a bot, from the API or the admin, is in the audit trail (apps.core.audit.registry).
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("Bot"), object_type="bot", object_id=lambda bot: bot.agent_id)
