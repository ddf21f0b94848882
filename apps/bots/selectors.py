"""Reads of bots, in the API's and the run engine's shapes."""

from django.db.models import Count, Prefetch

from apps.core.errors import NotFoundError

from .models import Bot, BotTool, KnowledgeBase, KnowledgeDocument


def _with_components(queryset):
    return queryset.prefetch_related(
        "tools",
        Prefetch("knowledge_bases", queryset=KnowledgeBase.objects.annotate(document_count=Count("documents"))),
    )


def bot_list():
    return _with_components(Bot.objects.all())


def bot_get(agent_id: str) -> Bot:
    bot = _with_components(Bot.objects.filter(agent_id=agent_id)).first()
    if bot is None:
        raise NotFoundError(f"No bot with agent_id {agent_id}")
    return bot


def bot_exists(agent_id: str) -> bool:
    return Bot.objects.filter(agent_id=agent_id).exists()


def bot_tool_names(agent_id: str) -> list[str]:
    return list(BotTool.objects.filter(bot__agent_id=agent_id).values_list("tool_name", flat=True))


def _tool_data(tool) -> dict:
    return {"id": tool.id, "name": tool.name, "tool_name": tool.tool_name, "type": tool.type,
            "description": tool.description, "output_instructions": tool.output_instructions}


def _kb_data(kb) -> dict:
    count = getattr(kb, "document_count", None)
    if count is None:
        count = kb.documents.count()
    return {"id": kb.id, "name": kb.name, "type": kb.type, "document_count": count}


def _llm_config(bot: Bot) -> dict:
    return {"provider": bot.llm_provider, "model": bot.llm_model, "parameters": bot.llm_parameters}


def bot_data(bot: Bot) -> dict:
    """The bot as the /bots endpoints return it. The secret is never part of it, only whether one is set."""
    return {
        "agent_id": bot.agent_id,
        "name": bot.name,
        "organization_id": bot.organization_id,
        "organization_name": bot.organization_name,
        "system_prompt": bot.system_prompt,
        "llm_config": _llm_config(bot),
        "harness_context": bot.harness_context,
        "adapter": bot.adapter,
        "endpoint_url": bot.endpoint_url,
        "has_secret": bot.has_secret,
        "tools": [_tool_data(t) for t in bot.tools.all()],
        "knowledge_bases": [_kb_data(kb) for kb in bot.knowledge_bases.all()],
        "created_at": bot.created_at,
        "updated_at": bot.updated_at,
    }


def bot_context_data(bot: Bot) -> dict:
    """The contract's BotContext shape."""
    return {
        "bot_id": bot.agent_id,
        "bot_name": bot.name,
        "organization_id": bot.organization_id,
        "organization_name": bot.organization_name,
        "system_prompt": bot.system_prompt,
        "llm_config": _llm_config(bot),
        "tools": [_tool_data(t) for t in bot.tools.all()],
        "knowledge_bases": [_kb_data(kb) for kb in bot.knowledge_bases.all()],
        "harness_context": bot.harness_context,
    }


def knowledge_base_documents(agent_id: str, kb_id: str) -> dict:
    kb = KnowledgeBase.objects.filter(bot__agent_id=agent_id, id=kb_id).first()
    if kb is None:
        raise NotFoundError(f"Bot {agent_id} has no knowledge base {kb_id}")
    return {"id": kb.id, "name": kb.name, "type": kb.type,
            "documents": [{"title": d.title, "text": d.text} for d in kb.documents.all()]}


def bot_spec_data(agent_id: str) -> dict:
    """Everything the run engine needs to talk to a bot, secret included (it never leaves the worker)."""
    bot = Bot.objects.filter(agent_id=agent_id).prefetch_related("tools").first()
    if bot is None:
        raise NotFoundError(f"No bot with agent_id {agent_id}")
    documents = KnowledgeDocument.objects.filter(knowledge_base__bot=bot).select_related("knowledge_base").order_by(
        "knowledge_base__position", "knowledge_base_id", "position", "id")
    return {
        "agent_id": bot.agent_id,
        "name": bot.name,
        "adapter": bot.adapter,
        "system_prompt": bot.system_prompt,
        "llm_provider": bot.llm_provider,
        "llm_model": bot.llm_model,
        "llm_parameters": dict(bot.llm_parameters or {}),
        "endpoint_url": bot.endpoint_url,
        "secret": bot.secret,
        "tools": [{"tool_name": t.tool_name, "name": t.name, "type": t.type, "description": t.description}
                  for t in bot.tools.all()],
        "documents": [{"knowledge_base": d.knowledge_base.name, "title": d.title, "text": d.text} for d in documents],
    }
