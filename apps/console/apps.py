from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The reviewer console: read-mostly pages over runs, results, traces and rubrics. Each page's
    data comes from its domain app's selectors; this app only holds the shared layout and the
    pages that span several apps (the dashboard)."""

    name = "apps.console"
    label = "console"
