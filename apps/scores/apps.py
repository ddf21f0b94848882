from django.apps import AppConfig


class ScoresConfig(AppConfig):
    name = "apps.scores"
    label = "scores"
    verbose_name = "Scores"
