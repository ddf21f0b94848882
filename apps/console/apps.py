from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The reviewer console: read-mostly pages over runs, results, traces and rubrics. Each page's
    data comes from its domain app's selectors; this app only holds the shared layout and the
    pages that span several apps (the dashboard)."""

    name = "apps.console"
    label = "console"

    def ready(self):
        from django.contrib import admin

        # One name across the admin and the console pages, which share its header.
        admin.site.site_header = admin.site.site_title = "evalsite"
