from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "apps.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"
