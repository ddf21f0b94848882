from django.apps import AppConfig


class TestsetsConfig(AppConfig):
    name = "apps.testsets"
    label = "testsets"
    verbose_name = "Test sets and question sets"
