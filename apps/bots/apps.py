from django.apps import AppConfig


class BotsConfig(AppConfig):
    name = "apps.bots"
    label = "bots"
    verbose_name = "Bots under test"
