"""/api/v1/queues: review queues, their items, assignment and reviews. Everyone with `read` reads;
creating, editing and filling queues and working their items needs `review` (a reviewer's work: a
key's scopes are capped by its owner's role, a session's are its role's); deleting one, as every
DELETE, needs `admin`."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from pydantic import BaseModel, Field
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.attributes import with_attributes
from apps.core.api.openapi import CONFLICT
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.errors import NotFoundError
from apps.core.models import DEFAULT_PROJECT_SLUG, Membership
from apps.core.projects.access import role_in
from apps.core.projects.resolution import project_of
from apps.scores.vocabulary import SubjectKind

from .. import selectors, services
from .schemas import (
    QueueAssignIn,
    QueueFillOut,
    QueueIn,
    QueueItemAddIn,
    QueueItemList,
    QueueItemOut,
    QueueItemReviewIn,
    QueueList,
    QueueOut,
)

TAG = ["queues"]


class ItemQuery(BaseModel):
    # A pattern rather than a Literal keeps the 422 a client already gets (string_pattern_mismatch);
    # the document lists the two values.
    state: str | None = Field(default=None, pattern="^(left|done)$", json_schema_extra={"enum": ["left", "done"]})
    limit: int = Field(default=50, ge=1, le=500)
    # Bounded: an offset past 64 bits reaches the database as an OFFSET it cannot hold (a 500).
    offset: int = Field(default=0, ge=0, le=100_000_000)


def _user(request):
    return request.user if request.user.is_authenticated else None


def _works_in(user, project) -> bool:
    """Whether `user` has a role in `project` (or, belonging to no project, is in `default`): an
    item is assigned only to such a person, and anyone else is answered as no such user."""
    if role_in(user, project) is not None:
        return True
    return project.slug == DEFAULT_PROJECT_SLUG and not Membership.objects.filter(user=user).exists()


def _queue(request, queue_id):
    """The queue of the request's project: another project's answers 404, as one that does not exist."""
    return selectors.queue_get(queue_id=queue_id, project=project_of(request))


def _item(request, queue_id, item_id):
    return selectors.queue_item_get(queue=_queue(request, queue_id), item_id=item_id)


def _item_answer(item):
    """One item as QueueItemOut reads it: a run result's public id, run and attempt, read from its
    subject under the names queue_item_list annotates a list's items with."""
    if item.subject_kind != SubjectKind.RUN_RESULT:
        return item
    result = selectors.queue_item_subject(item=item)
    return with_attributes(
        item,
        result_uuid=result.result_id,
        run_uuid=result.run.run_id,
        run_label=result.run.label,
        result_attempt=result.attempt,
        run_repeats=result.run.repeats,
    )


class QueuesView(APIView):
    required_scopes = {"GET": "read", "POST": "review"}

    @extend_schema(
        tags=TAG, responses={200: QueueList}, summary="Review queues with their progress", operation_id="queues_list"
    )
    def get(self, request):
        return respond(QueueList, list(selectors.queue_list(project=project_of(request))))

    @extend_schema(tags=TAG, request=QueueIn, responses={201: QueueOut, 409: CONFLICT}, summary="Create a review queue")
    def post(self, request):
        body = validate_body(QueueIn, request.data)
        queue = services.queue_create(project=project_of(request), created_by=_user(request), **body.rule())
        # Read again with its progress (none yet), as every queue answer shows it.
        return respond(QueueOut, _queue(request, queue.pk), status=status.HTTP_201_CREATED)


class QueueDetailView(APIView):
    # Every DELETE of the API needs `admin` (README): a reviewer edits a queue but does not remove
    # it (nor the record of whose work it held).
    required_scopes = {"GET": "read", "PUT": "review", "DELETE": "admin"}

    @extend_schema(tags=TAG, responses={200: QueueOut}, summary="Get a review queue")
    def get(self, request, queue_id):
        return respond(QueueOut, _queue(request, queue_id))

    @extend_schema(
        tags=TAG,
        request=QueueIn,
        responses={200: QueueOut, 409: CONFLICT},
        summary="Replace a review queue's name, description and rule",
    )
    def put(self, request, queue_id):
        body = validate_body(QueueIn, request.data)
        queue = services.queue_update(queue=_queue(request, queue_id), **body.rule())
        return respond(QueueOut, _queue(request, queue.pk))

    @extend_schema(tags=TAG, responses={204: None}, summary="Delete a review queue (admin scope; its reviews stay)")
    def delete(self, request, queue_id):
        services.queue_delete(queue=_queue(request, queue_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class QueueFillView(APIView):
    required_scopes = {"POST": "review"}

    @extend_schema(
        tags=TAG,
        request=None,
        responses={200: QueueFillOut},
        summary="Apply the queue's rule to what exists now (idempotent)",
    )
    def post(self, request, queue_id):
        queue = _queue(request, queue_id)
        entered = services.queue_fill(queue=queue)
        return respond(QueueFillOut, {"entered": entered, "total": queue.items.count()})


class QueueItemsView(APIView):
    required_scopes = {"GET": "read", "POST": "review"}

    @extend_schema(
        tags=TAG,
        responses={200: QueueItemList},
        summary="A queue's items in queue order",
        parameters=query_parameters(ItemQuery),
        operation_id="queue_items_list",
    )
    def get(self, request, queue_id):
        query = query_of(ItemQuery, request)
        items = selectors.queue_item_list(
            queue=_queue(request, queue_id), filters=query.model_dump(include={"state"}, exclude_none=True)
        )
        page = items[query.offset : query.offset + query.limit]
        return respond(QueueItemList, {"count": items.count(), "results": list(page)})

    @extend_schema(
        tags=TAG,
        request=QueueItemAddIn,
        responses={201: QueueItemOut, 200: QueueItemOut},
        summary="Add an object to the queue by hand (200 when it already is in it)",
    )
    def post(self, request, queue_id):
        body = validate_body(QueueItemAddIn, request.data)
        item, created = services.queue_item_add(
            queue=_queue(request, queue_id), target_id=body.target_id, kind=body.kind
        )
        return respond(
            QueueItemOut, _item_answer(item), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class ItemAssignView(APIView):
    required_scopes = {"POST": "review"}

    @extend_schema(
        tags=TAG, request=QueueAssignIn, responses={200: QueueItemOut}, summary="Assign an item to a reviewer"
    )
    def post(self, request, queue_id, item_id):
        body = validate_body(QueueAssignIn, request.data)
        user = None
        if body.username is not None:
            user = get_user_model().objects.filter(username=body.username, is_active=True).first()
            if user is not None and not _works_in(user, project_of(request)):
                user = None
            if user is None:
                raise NotFoundError(f"No active user {body.username!r}")
        return respond(
            QueueItemOut, _item_answer(services.queue_item_assign(item=_item(request, queue_id, item_id), user=user))
        )


class ItemClaimView(APIView):
    required_scopes = {"POST": "review"}

    @extend_schema(
        tags=TAG, request=None, responses={200: QueueItemOut, 409: CONFLICT}, summary="Claim an item for yourself"
    )
    def post(self, request, queue_id, item_id):
        return respond(
            QueueItemOut,
            _item_answer(services.queue_item_claim(item=_item(request, queue_id, item_id), user=request.user)),
        )


class ItemReviewView(APIView):
    required_scopes = {"POST": "review"}

    @extend_schema(
        tags=TAG,
        request=QueueItemReviewIn,
        responses={200: QueueItemOut},
        summary="Review an item's verdicts; the item is then done",
    )
    def post(self, request, queue_id, item_id):
        body = validate_body(QueueItemReviewIn, request.data)
        item = services.queue_item_review(
            item=_item(request, queue_id, item_id),
            reviewer=request.user,
            verdicts=[v.model_dump() for v in body.verdicts],
            note=body.note,
        )
        return respond(QueueItemOut, _item_answer(item))
