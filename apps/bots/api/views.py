from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.bots import selectors, services
from apps.bots.schemas import BotIn
from apps.core.api.openapi import CONFLICT
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.projects.resolution import project_of

from .schemas import BotContextOut, BotListOut, BotOut, KnowledgeBaseDocumentsOut

TAG = ["bots"]


class BotListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(tags=TAG, responses={200: BotListOut}, operation_id="bots_list", summary="List bots")
    def get(self, request):
        return respond(BotListOut, list(selectors.bot_list(project=project_of(request))))

    @extend_schema(
        tags=TAG,
        request=BotIn,
        responses={201: BotOut, 409: CONFLICT},
        operation_id="bots_create",
        summary="Create a bot",
        description="agent_id (24 hex characters) is generated when omitted; the secret is write-only.",
    )
    def post(self, request):
        body = validate_body(BotIn, request.data)
        project = project_of(request)
        bot = services.bot_create(data=body, project=project)
        return respond(BotOut, selectors.bot_get(bot.agent_id, project=project), status=status.HTTP_201_CREATED)


class BotDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(tags=TAG, responses={200: BotOut}, operation_id="bots_get", summary="Get a bot")
    def get(self, request, agent_id):
        return respond(BotOut, selectors.bot_get(agent_id, project=project_of(request)))

    @extend_schema(
        tags=TAG,
        request=BotIn,
        responses={200: BotOut, 409: CONFLICT},
        operation_id="bots_update",
        summary="Replace a bot",
        description="Omit secret to keep the stored one, unless adapter or endpoint_url changes: then the "
        "stored secret is dropped unless sent again. Omit a knowledge base's documents to "
        "keep them.",
    )
    def put(self, request, agent_id):
        bot = selectors.bot_get(agent_id, project=project_of(request))
        body = validate_body(BotIn, request.data)
        services.bot_update(bot=bot, data=body)
        return respond(BotOut, selectors.bot_get(agent_id, project=project_of(request)))

    @extend_schema(
        tags=TAG, responses={204: None, 409: CONFLICT}, operation_id="bots_delete", summary="Delete a bot (admin scope)"
    )
    def delete(self, request, agent_id):
        services.bot_delete(bot=selectors.bot_get(agent_id, project=project_of(request)))
        return Response(status=status.HTTP_204_NO_CONTENT)


class BotContextView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG, responses={200: BotContextOut}, operation_id="bots_context", summary="The bot's context (BotContext)"
    )
    def get(self, request, agent_id):
        return respond(BotContextOut, selectors.bot_get(agent_id, project=project_of(request)))


class KnowledgeBaseDocumentsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: KnowledgeBaseDocumentsOut},
        operation_id="bots_knowledge_base_documents",
        summary="A knowledge base with its documents",
    )
    def get(self, request, agent_id, kb_id):
        return respond(
            KnowledgeBaseDocumentsOut, selectors.knowledge_base_get(agent_id, kb_id, project=project_of(request))
        )
