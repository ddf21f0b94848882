import secrets

from django.db import models

from apps.core.auth import crypto
from apps.core.models import Project


def new_object_id() -> str:
    """A 24-hex-character id, the shape existing clients know as a MongoDB ObjectId."""
    return secrets.token_hex(12)


class OfBotQuerySet(models.QuerySet):
    """For the rows that belong to a bot through a foreign key named `bot` (rubrics, test sets,
    question sets), read with their bot."""

    def of_project(self, project):
        return self.filter(project=project)

    def of_bot(self, agent_id: str | None = None):
        """The rows of the bot `agent_id`, every row when None."""
        rows = self.select_related("bot")
        return rows if agent_id is None else rows.filter(bot__agent_id=agent_id)


class BotQuerySet(models.QuerySet):
    def of_project(self, project):
        """The bots of `project` (a Project or its id): every lookup by agent_id goes through this,
        since an agent_id is unique only within its project."""
        return self.filter(project=project)


class Bot(models.Model):
    """An agent under test: what it is (prompt, model, tools, knowledge) and how evalsite reaches it."""

    class Adapter(models.TextChoices):
        HTTP = "http"
        OPENAI = "openai"
        DEMO = "demo"

    # The project it belongs to; its tools and knowledge bases belong through it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    # Unique per project, not globally: a client chooses it, and a conflict with another project's
    # bot would tell that client the id exists there.
    agent_id = models.CharField(
        "bot id",
        max_length=24,
        default=new_object_id,
        help_text="24 hexadecimal characters; the API calls it agent_id.",
    )
    name = models.CharField(max_length=255)
    organization_id = models.CharField(max_length=24, blank=True, default="")
    organization_name = models.CharField(max_length=255, blank=True, default="")
    system_prompt = models.TextField(blank=True, default="")
    llm_provider = models.CharField(max_length=100, blank=True, default="")
    llm_model = models.CharField(max_length=255, blank=True, default="")
    llm_parameters = models.JSONField(default=dict, blank=True)
    harness_context = models.JSONField(default=dict, blank=True)
    adapter = models.CharField(max_length=16, choices=Adapter.choices, default=Adapter.DEMO)
    endpoint_url = models.CharField(max_length=2000, blank=True, default="")
    # The credential evalsite sends to the bot, Fernet-encrypted (apps.core.auth.crypto); read and set
    # it through `secret`. Write-only: no API response, admin page or log line ever shows it.
    encrypted_secret = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BotQuerySet.as_manager()

    class Meta:
        ordering = ["name", "agent_id"]
        constraints = [models.UniqueConstraint(fields=["project", "agent_id"], name="bot_agent_id_per_project")]

    def __str__(self):
        return f"{self.name} ({self.agent_id})"

    def __repr__(self):
        return f"<Bot {self.agent_id} {self.name!r}>"

    @property
    def llm_config(self) -> dict:
        """The model settings grouped as the API and the contracts' BotContext show them."""
        return {"provider": self.llm_provider, "model": self.llm_model, "parameters": self.llm_parameters}

    @property
    def has_secret(self) -> bool:
        return bool(self.encrypted_secret)

    @property
    def secret(self) -> str:
        """The plaintext secret; raises crypto.SecretUnreadable when no configured key opens it."""
        return crypto.decrypt(self.encrypted_secret)

    @secret.setter
    def secret(self, plaintext: str) -> None:
        self.encrypted_secret = crypto.encrypt(plaintext)


class BotTool(models.Model):
    class Type(models.TextChoices):
        # The kinds the demo data and the seed contracts use. The API keeps accepting any short
        # text (old clients send others); the admin offers these plus whatever a row already has.
        FUNCTION = "function"
        KNOWLEDGE_BASE = "knowledge_base"
        HUMAN_HANDOFF = "human_handoff"

    # The row's own key, never shown. What the API calls the tool's `id` is `component_id`: the
    # client may choose it, so it is unique per bot only (two projects may import the same bot with
    # the same ids, and neither learns of the other through a conflict).
    id = models.CharField(max_length=24, primary_key=True, default=new_object_id)
    component_id = models.CharField(max_length=24, default=new_object_id)
    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="tools")
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=255)
    tool_name = models.CharField(max_length=255)
    type = models.CharField(max_length=100, blank=True, default="")
    description = models.TextField(blank=True, default="")
    output_instructions = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["bot_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["bot", "tool_name"], name="bottool_unique_tool_name"),
            models.UniqueConstraint(fields=["bot", "component_id"], name="bottool_unique_component_id"),
        ]

    def __str__(self):
        return self.tool_name


class KnowledgeBase(models.Model):
    # As a tool's: `id` is the row's key, `component_id` the API's `id`, unique per bot.
    id = models.CharField(max_length=24, primary_key=True, default=new_object_id)
    component_id = models.CharField(max_length=24, default=new_object_id)
    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="knowledge_bases")
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=100, blank=True, default="file")

    class Meta:
        ordering = ["bot_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["bot", "component_id"], name="knowledgebase_unique_component_id")
        ]

    def __str__(self):
        return self.name


class KnowledgeDocument(models.Model):
    """A document of a knowledge base, stored so the built-in demo bot can search it offline."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="documents")
    position = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=500)
    text = models.TextField()

    class Meta:
        ordering = ["knowledge_base_id", "position", "id"]

    def __str__(self):
        return self.title
