from django.apps import AppConfig


class NlqueryConfig(AppConfig):
    name = "apps.nlquery"
    label = "nlquery"
    verbose_name = "Natural-language metrics queries"
