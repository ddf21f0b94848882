from django.apps import AppConfig
from django.contrib import admin


class ConsoleConfig(AppConfig):
    """The reviewer console: read-mostly pages over runs, results, traces and rubrics (apps.console.views).
    Each page's data comes from its domain app's selectors and its writes go through that app's
    services; this app holds the pages and their shared layout, and no app imports it."""

    name = "apps.console"
    label = "console"

    def ready(self):
        # One name across the admin and the console pages, which share its header.
        admin.site.site_header = admin.site.site_title = "evalsite"
