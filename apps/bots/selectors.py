"""Reads of bots: the rows the API's Out schemas read (apps.bots.schemas), and the run engine's spec."""

import hashlib
from urllib.parse import urlsplit

from django.db.models import Count, Prefetch

from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.outbound import OutboundError, resolve_allowed

from .adapters import BotSpec
from .models import Bot, KnowledgeBase, KnowledgeDocument


def _with_components(queryset):
    # What BotOut and BotContextOut read: the tools, the knowledge bases and their document counts.
    return queryset.prefetch_related(
        "tools",
        Prefetch("knowledge_bases", queryset=KnowledgeBase.objects.annotate(document_count=Count("documents"))),
    )


def bot_list(*, project):
    return _with_components(Bot.objects.of_project(project))


def bot_get(agent_id: str, *, project) -> Bot:
    """The bot `agent_id` of `project`; another project's is NotFoundError, as one that does not exist."""
    bot = _with_components(Bot.objects.of_project(project).filter(agent_id=agent_id)).first()
    if bot is None:
        raise NotFoundError(f"No bot with agent_id {agent_id}")
    return bot


def bot_named_in_body(agent_id: str, *, project) -> Bot:
    """The bot of `project` a request body's agent_id names (a rubric's, a test set's). Naming none
    (or another project's) is an InvalidInputError (422), not a 404: the body is wrong, not the URL."""
    bot = Bot.objects.of_project(project).filter(agent_id=agent_id).first()
    if bot is None:
        raise InvalidInputError(f"agent_id {agent_id} does not name a bot")
    return bot


def knowledge_base_get(agent_id: str, kb_id: str, *, project) -> KnowledgeBase:
    """The bot's knowledge base with its documents (the bot of `project`)."""
    kb = (
        KnowledgeBase.objects.filter(bot__project=project, bot__agent_id=agent_id, component_id=kb_id)
        .prefetch_related("documents")
        .first()
    )
    if kb is None:
        raise NotFoundError(f"Bot {agent_id} has no knowledge base {kb_id}")
    return kb


def bot_spec_data(agent_id: str, *, project) -> dict:
    """Everything the run engine needs to talk to a bot of `project` (a run's: its bot is looked up
    in the run's project, never by id alone), secret included (it never leaves the worker)."""
    bot = Bot.objects.of_project(project).filter(agent_id=agent_id).prefetch_related("tools").first()
    if bot is None:
        raise NotFoundError(f"No bot with agent_id {agent_id}")
    documents = (
        KnowledgeDocument.objects.filter(knowledge_base__bot=bot)
        .select_related("knowledge_base")
        .order_by("knowledge_base__position", "knowledge_base_id", "position", "id")
    )
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
        "tools": [
            {"tool_name": t.tool_name, "name": t.name, "type": t.type, "description": t.description}
            for t in bot.tools.all()
        ],
        "documents": [{"knowledge_base": d.knowledge_base.name, "title": d.title, "text": d.text} for d in documents],
    }


def bot_config_snapshot(spec: BotSpec) -> dict:
    """What a run records of its bot: enough to say later what changed between two runs (prompt,
    model, parameters, tools, knowledge-base documents), never the secret. Documents keep their
    title and a sha256 of their text, not the text: a changed document shows as a changed hash."""
    return {
        "name": spec.name,
        "adapter": spec.adapter,
        "endpoint_url": spec.endpoint_url,
        "system_prompt": spec.system_prompt,
        "llm_provider": spec.llm_provider,
        "llm_model": spec.llm_model,
        "llm_parameters": dict(spec.llm_parameters or {}),
        "tools": [
            {"tool_name": t.tool_name, "name": t.name, "type": t.type, "description": t.description} for t in spec.tools
        ],
        "documents": [
            {
                "knowledge_base": d.knowledge_base,
                "title": d.title,
                "sha256": hashlib.sha256(d.text.encode()).hexdigest(),
            }
            for d in spec.documents
        ],
    }


def _model_name(snapshot: dict) -> str:
    return " ".join(p for p in (snapshot.get("llm_provider"), snapshot.get("llm_model")) if p) or "(none)"


def bot_snapshot_changes(before: dict, after: dict) -> list[dict]:
    """What changed from one bot snapshot to another, as {"what", "change", "detail"} rows (what:
    prompt, model, parameter, tool, document, ...; change: changed, added, removed). An empty
    snapshot (a run older than snapshots) compares as unknown, not as "everything removed"."""
    if not before or not after:
        return []
    changes = []
    for key, what in (("name", "name"), ("adapter", "adapter"), ("endpoint_url", "endpoint")):
        if before.get(key) != after.get(key):
            changes.append(
                {"what": what, "change": "changed", "detail": f"{before.get(key) or '—'} → {after.get(key) or '—'}"}
            )
    if before.get("system_prompt") != after.get("system_prompt"):
        changes.append(
            {
                "what": "prompt",
                "change": "changed",
                "detail": f"{len(before.get('system_prompt') or '')} → "
                f"{len(after.get('system_prompt') or '')} characters",
            }
        )
    if _model_name(before) != _model_name(after):
        changes.append(
            {"what": "model", "change": "changed", "detail": f"{_model_name(before)} → {_model_name(after)}"}
        )
    old_params, new_params = before.get("llm_parameters") or {}, after.get("llm_parameters") or {}
    for name in sorted(set(old_params) | set(new_params)):
        if name not in new_params:
            changes.append({"what": "parameter", "change": "removed", "detail": f"{name} (was {old_params[name]!r})"})
        elif name not in old_params:
            changes.append({"what": "parameter", "change": "added", "detail": f"{name} = {new_params[name]!r}"})
        elif old_params[name] != new_params[name]:
            changes.append(
                {
                    "what": "parameter",
                    "change": "changed",
                    "detail": f"{name}: {old_params[name]!r} → {new_params[name]!r}",
                }
            )
    old_tools = {t["tool_name"]: t for t in before.get("tools") or []}
    new_tools = {t["tool_name"]: t for t in after.get("tools") or []}
    for name in sorted(set(old_tools) | set(new_tools)):
        if name not in new_tools:
            changes.append({"what": "tool", "change": "removed", "detail": name})
        elif name not in old_tools:
            changes.append({"what": "tool", "change": "added", "detail": name})
        elif old_tools[name] != new_tools[name]:
            changes.append({"what": "tool", "change": "changed", "detail": name})
    old_docs = {(d["knowledge_base"], d["title"]): d["sha256"] for d in before.get("documents") or []}
    new_docs = {(d["knowledge_base"], d["title"]): d["sha256"] for d in after.get("documents") or []}
    for kb, title in sorted(set(old_docs) | set(new_docs)):
        detail = f"{title} ({kb})"
        if (kb, title) not in new_docs:
            changes.append({"what": "document", "change": "removed", "detail": detail})
        elif (kb, title) not in old_docs:
            changes.append({"what": "document", "change": "added", "detail": detail})
        elif old_docs[(kb, title)] != new_docs[(kb, title)]:
            changes.append({"what": "document", "change": "changed", "detail": f"{detail}: content differs"})
    return changes


def bot_endpoint_refusal(bot: Bot) -> str | None:
    """Why the outbound guard would refuse to call the bot's endpoint (a loopback or private
    address that EVALSITE_OUTBOUND_ALLOW does not list, a name that does not resolve), or None when
    it would call it or the bot has no endpoint. Asked when the bot is saved, so that whoever sets
    the address learns it then, not from a run whose every item errors."""
    if bot.adapter != Bot.Adapter.HTTP or not bot.endpoint_url:
        return None
    parts = urlsplit(bot.endpoint_url)
    if not parts.hostname:
        return f"{bot.endpoint_url} names no host"
    try:
        resolve_allowed(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except OutboundError as exc:
        return exc.reason
    except ValueError as exc:  # a port that is not a number
        return str(exc)
    return None
