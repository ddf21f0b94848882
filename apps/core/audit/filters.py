"""The audit trail's filters as one FilterSet (selectors.audit_events applies it to a project's
events before paging them). The API's query model (api.schemas.AuditQuery) and the console page's
form have validated the values; the FilterSet says what each one selects."""

import django_filters

from apps.core.models import AuditEvent


class AuditEventFilter(django_filters.FilterSet):
    action = django_filters.CharFilter()
    object_type = django_filters.CharFilter()
    object_id = django_filters.CharFilter()
    actor = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields: list[str] = []  # only the filters declared above
