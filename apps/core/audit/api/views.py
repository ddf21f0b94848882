from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.models import SCOPE_ADMIN
from apps.core.projects.resolution import project_of

from .. import selectors
from .schemas import AuditPageOut, AuditQuery

TAG = ["audit"]


def event_out(event) -> dict:
    return {
        "id": event.pk,
        "created_at": event.created_at,
        "project": event.project_slug,
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "object_repr": event.object_repr,
        "changes": event.changes,
    }


class AuditListView(APIView):
    # The admin scope: a project admin's session, a superuser's, or a key of an admin that holds it.
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAG,
        responses={200: AuditPageOut},
        summary="The project's audit trail, newest first (project admins)",
        description="Every change to configuration and access in the request's project (its key's, or the "
        "session's chosen project): who (`actor`), what (`action` on `object_type` `object_id`) and the "
        "fields before and after (`changes`, secrets redacted). Append-only: no endpoint changes it.",
        parameters=query_parameters(AuditQuery),
    )
    def get(self, request):
        query = query_of(AuditQuery, request)
        page = selectors.audit_events(
            project=project_of(request),
            limit=query.limit,
            offset=query.offset,
            filters=query.model_dump(include=set(selectors.FILTERS), exclude_none=True),
        )
        return respond(
            AuditPageOut,
            {
                "count": len(page.events),
                "limit": query.limit,
                "offset": query.offset,
                "has_more": page.has_more,
                "events": [event_out(e) for e in page.events],
            },
        )
