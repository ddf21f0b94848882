from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    """django.contrib.admin with evalsite's site as `admin.site` (apps.core.admin_site says who enters).
    A module of its own: INSTALLED_APPS imports it before the models are ready, the site after."""

    default_site = "apps.core.admin_site.EvalsiteAdminSite"
