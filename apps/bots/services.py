"""Writes of bots, their tools, knowledge bases and documents."""

import hashlib
from contextlib import contextmanager

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from apps.core.audit.registry import audit_recorded_by_caller, registered_state
from apps.core.audit.services import audit_record, created
from apps.core.auth import crypto
from apps.core.errors import ConflictError
from apps.core.models import Project

from .models import Bot, BotTool, KnowledgeBase, KnowledgeDocument, new_object_id
from .schemas import BotIn, KnowledgeBaseIn, ToolIn


def secret_survives_change(*, old_adapter: str, old_endpoint_url: str, new_adapter: str, new_endpoint_url: str) -> bool:
    """Whether a stored secret may stay with the bot after an edit that sends no new one.

    A secret belongs to the address it was given for: if the URL or the adapter changed and the
    secret were kept, anyone allowed to edit the bot could point it at their own listener and
    receive the secret with the next run."""
    return old_adapter == new_adapter and old_endpoint_url == new_endpoint_url


def _apply_fields(bot: Bot, data: BotIn) -> None:
    if data.secret is not None:
        bot.secret = data.secret
    elif bot.pk and not secret_survives_change(
        old_adapter=bot.adapter,
        old_endpoint_url=bot.endpoint_url,
        new_adapter=data.adapter,
        new_endpoint_url=data.endpoint_url,
    ):
        bot.secret = ""
    bot.name = data.name
    bot.organization_id = data.organization_id
    bot.organization_name = data.organization_name
    bot.system_prompt = data.system_prompt
    bot.llm_provider = data.llm_config.provider
    bot.llm_model = data.llm_config.model
    bot.llm_parameters = data.llm_config.parameters
    bot.harness_context = data.harness_context
    bot.adapter = data.adapter
    bot.endpoint_url = data.endpoint_url


def _sync_tools(bot: Bot, tools: list[ToolIn]) -> None:
    # A tool keeps its id when it is named by id or by tool_name: rubric rules refer to component ids.
    existing = list(bot.tools.all())
    by_id = {t.component_id: t for t in existing}
    by_name = {t.tool_name: t for t in existing}
    kept = []
    for position, tool in enumerate(tools):
        match = by_id.get(tool.id) if tool.id else by_name.get(tool.tool_name)
        pk = match.pk if match else new_object_id()
        kept.append(
            BotTool(
                id=pk,
                component_id=match.component_id if match else (tool.id or pk),
                bot=bot,
                position=position,
                name=tool.name,
                tool_name=tool.tool_name,
                type=tool.type,
                description=tool.description,
                output_instructions=tool.output_instructions,
            )
        )
    bot.tools.all().delete()
    BotTool.objects.bulk_create(kept)


def _sync_knowledge_bases(bot: Bot, knowledge_bases: list[KnowledgeBaseIn]) -> None:
    existing = {kb.component_id: kb for kb in bot.knowledge_bases.all()}
    by_name = {kb.name: kb for kb in existing.values()}
    kept_ids = set()
    for position, kb_in in enumerate(knowledge_bases):
        match = existing.get(kb_in.id) if kb_in.id else by_name.get(kb_in.name)
        if match is None:
            pk = new_object_id()
            match = KnowledgeBase(id=pk, component_id=kb_in.id or pk, bot=bot)
            created = True
        else:
            created = False
        match.position, match.name, match.type = position, kb_in.name, kb_in.type
        match.save(force_insert=created)
        kept_ids.add(match.id)
        if kb_in.documents is not None:
            match.documents.all().delete()
            KnowledgeDocument.objects.bulk_create(
                KnowledgeDocument(knowledge_base=match, position=i, title=doc.title, text=doc.text)
                for i, doc in enumerate(kb_in.documents)
            )
    bot.knowledge_bases.exclude(id__in=kept_ids).delete()


def _taken_component_ids(bot: Bot | None, data: BotIn, project: Project) -> None:
    """A tool or knowledge-base id given by the client must not name another bot's of the same
    project (rubric rules name components by id). Other projects' bots are not looked at: their ids
    are theirs, and a conflict would tell that they exist."""
    tool_ids = [t.id for t in data.tools if t.id]
    kb_ids = [k.id for k in data.knowledge_bases if k.id]
    foreign_tools = BotTool.objects.filter(bot__project=project, component_id__in=tool_ids)
    foreign_kbs = KnowledgeBase.objects.filter(bot__project=project, component_id__in=kb_ids)
    if bot is not None:
        foreign_tools = foreign_tools.exclude(bot=bot)
        foreign_kbs = foreign_kbs.exclude(bot=bot)
    taken = sorted(
        [*foreign_tools.values_list("component_id", flat=True), *foreign_kbs.values_list("component_id", flat=True)]
    )
    if taken:
        raise ConflictError(f"These tool or knowledge base ids belong to another bot: {', '.join(taken)}")


def bot_components(bot: Bot) -> dict:
    """A bot's tools and knowledge bases as its audit events record them, one entry per component
    ("tools.<tool_name>", "knowledge_bases.<name>"), so an event names the component that changed.
    A document is its title and a digest of its text: an edit of the text shows, and the trail
    does not copy the corpus."""
    components = {
        f"tools.{t.tool_name}": {
            "id": t.component_id,
            "name": t.name,
            "type": t.type,
            "description": t.description,
            "output_instructions": t.output_instructions,
        }
        for t in BotTool.objects.filter(bot=bot).order_by("position", "id")
    }
    for kb in KnowledgeBase.objects.filter(bot=bot).order_by("position", "id").prefetch_related("documents"):
        key = f"knowledge_bases.{kb.name}"
        # Names are not unique: a second one of the same name is told apart by its id.
        components[key if key not in components else f"{key}#{kb.component_id}"] = {
            "id": kb.component_id,
            "type": kb.type,
            "documents": [
                {"title": d.title, "text_sha256": hashlib.sha256(d.text.encode()).hexdigest()[:16]}
                for d in kb.documents.order_by("position", "id")
            ],
        }
    return components


def bot_state(bot: Bot | None) -> dict | None:
    """What a bot's audit event compares: its own fields and its components (None: no bot yet)."""
    return None if bot is None else {**registered_state(bot), **bot_components(bot)}


def _bot_changes(before: dict, after: dict) -> dict:
    """{name: [before, after]} of what differs: a field; a component added or removed (the whole of
    it on one side); or, of a component on both sides, each of its fields that changed
    ("tools.search_kb.description")."""
    changes = {}
    for name in [*after, *(name for name in before if name not in after)]:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict) and name.startswith(("tools.", "knowledge_bases.")):
            for field in [*new, *(f for f in old if f not in new)]:
                if old.get(field) != new.get(field):
                    changes[f"{name}.{field}"] = [old.get(field), new.get(field)]
        else:
            changes[name] = [old, new]
    return changes


class _Audited:
    """The bot a `bot_audited` block saved (set by the block when it creates one)."""

    def __init__(self, bot: Bot | None):
        self.bot = bot


@contextmanager
def bot_audited(bot: Bot | None):
    """One audit event for a bot's whole change, its tools and knowledge bases included: the body
    runs with the row's own signal quiet and sets `audited.bot` to the bot it creates; `bot` is
    the bot before the change (None for a new one)."""
    before = bot_state(bot)
    audited = _Audited(bot)
    with audit_recorded_by_caller(Bot):
        yield audited
    if audited.bot is not None:
        bot_audit_change(audited.bot, before)


def bot_audit_change(bot: Bot, before: dict | None) -> None:
    """The audit event of a change to `bot` (fields, tools, knowledge bases) from the state
    `before` (bot_state before it; None when the bot is new), if anything changed."""
    after = bot_state(bot)
    changes = created(after) if before is None else _bot_changes(before, after)
    if changes:
        audit_record(
            action="create" if before is None else "update",
            obj=bot,
            object_type="bot",
            object_id=bot.agent_id,
            changes=changes,
        )


def bot_create(*, data: BotIn, project: Project) -> Bot:
    """Create a bot of `project` with its tools and knowledge bases; an agent_id already in use in
    the project is a conflict (the same id in another project is another bot)."""
    agent_id = data.agent_id or new_object_id()
    try:
        with transaction.atomic():
            if Bot.objects.of_project(project).filter(agent_id=agent_id).exists():
                raise ConflictError(f"A bot with agent_id {agent_id} already exists")
            _taken_component_ids(None, data, project)
            with bot_audited(None) as audited:
                bot = audited.bot = Bot(agent_id=agent_id, project=project)
                _apply_fields(bot, data)
                bot.save()
                _sync_tools(bot, data.tools)
                _sync_knowledge_bases(
                    bot,
                    [
                        kb if kb.documents is not None else kb.model_copy(update={"documents": []})
                        for kb in data.knowledge_bases
                    ],
                )
    except IntegrityError:
        raise ConflictError(f"A bot with agent_id {agent_id} already exists") from None
    return bot


@transaction.atomic
def bot_update(*, bot: Bot, data: BotIn) -> Bot:
    """Replace a bot's description. The stored secret is kept unless a new one is given or the
    adapter or endpoint_url changes (then it is dropped unless sent again); tools and
    knowledge bases keep their ids when matched by id or name; omitted documents are kept."""
    bot = Bot.objects.select_for_update().get(pk=bot.pk)
    if data.agent_id and data.agent_id != bot.agent_id:
        raise ConflictError(f"agent_id cannot change (this bot is {bot.agent_id})")
    _taken_component_ids(bot, data, bot.project)
    with bot_audited(bot):
        _apply_fields(bot, data)
        bot.save()
        _sync_tools(bot, data.tools)
        _sync_knowledge_bases(bot, data.knowledge_bases)
    return bot


def bot_secrets_reencrypt() -> tuple[int, list[str]]:
    """Re-encrypt every stored bot secret under the current first key of
    EVALSITE_SECRET_KEY_ENCRYPTION. Returns (re-encrypted count, agent_ids no configured key opens);
    those are left as they are."""
    done, unreadable = 0, []
    for pk, agent_id, token in (
        Bot.objects.exclude(encrypted_secret="").values_list("pk", "agent_id", "encrypted_secret").iterator()
    ):
        try:
            rotated = crypto.reencrypt(token)
        except crypto.SecretUnreadable:
            unreadable.append(agent_id)
            continue
        # Compared with the token read, so a secret changed meanwhile is not overwritten.
        done += Bot.objects.filter(pk=pk, encrypted_secret=token).update(encrypted_secret=rotated)
    return done, unreadable


def bot_delete(*, bot: Bot) -> None:
    try:
        with transaction.atomic():
            bot.delete()
    except ProtectedError:
        raise ConflictError(f"Bot {bot.agent_id} still has rubrics or test sets; delete them first") from None
