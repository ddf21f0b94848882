import factory

from apps.bots.adapters import BotDocument, BotSpec
from apps.bots.adapters import BotTool as BotSpecTool
from apps.bots.models import Bot, BotTool, KnowledgeBase, KnowledgeDocument, new_object_id
from apps.core.models import Project


class BotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Bot
        skip_postgeneration_save = True

    project = factory.LazyFunction(Project.objects.default)
    agent_id = factory.LazyFunction(new_object_id)
    name = factory.Sequence(lambda n: f"Bot {n}")
    adapter = "demo"

    @factory.post_generation
    def tool_names(self, create, extracted, **kwargs):
        for position, tool_name in enumerate(extracted or ()):
            BotToolFactory(bot=self, tool_name=tool_name, position=position)


class BotToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BotTool

    bot = factory.SubFactory(BotFactory)
    name = factory.LazyAttribute(lambda o: o.tool_name.replace("_", " ").title())
    tool_name = factory.Sequence(lambda n: f"tool_{n}")
    type = "function"


class KnowledgeBaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = KnowledgeBase

    bot = factory.SubFactory(BotFactory)
    name = factory.Sequence(lambda n: f"KB {n}")


class KnowledgeDocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = KnowledgeDocument

    knowledge_base = factory.SubFactory(KnowledgeBaseFactory)
    title = factory.Sequence(lambda n: f"Doc {n}")
    text = "Paragraph one.\n\nParagraph two."


# What the run engine hands an adapter: a bot as BotSpec, with the HR handbook the demo bot answers from.
HANDBOOK = (
    BotDocument(
        "HR Handbook",
        "PTO Policy",
        "Full-time employees accrue 1.5 days of paid time off per month, up to 18 days a year.\n\n"
        "Unused PTO of up to 5 days carries over into the next calendar year.",
    ),
    BotDocument(
        "HR Handbook",
        "Expense Policy",
        "Submit expense reports within 30 days with itemised receipts.\n\n"
        "Meals while travelling are reimbursed up to 75 dollars per day.",
    ),
)
TOOLS = (
    BotSpecTool("search_kb", "Search handbook", "knowledge_base"),
    BotSpecTool("live_handoff", "Live Chat Handoff", "human_handoff"),
)


def make_bot_spec(**extra) -> BotSpec:
    base = dict(agent_id="a" * 24, name="HR bot", adapter="demo", tools=TOOLS, documents=HANDBOOK)
    return BotSpec(**{**base, **extra})


def user_turn(text: str) -> list[dict]:
    """A conversation of one user message."""
    return [{"role": "user", "content": text}]


SECRET = "sk-very-secret-value-123"


def bot_body(**overrides):
    """The body of POST /api/v1/bots: every field, two tools and a knowledge base of two documents."""
    body = {
        "name": "O'Connor Associate",
        "organization_id": "64f1c0ffee0000000000a001",
        "organization_name": "O'Connor Insurance",
        "system_prompt": "You are an assistant.",
        "llm_config": {"provider": "openai", "model": "gpt-4.1", "parameters": {"temperature": 0.3}},
        "harness_context": {"version": "1.0", "execution_flow": [{"step": 1, "node": "invoke_model"}]},
        "adapter": "http",
        "endpoint_url": "http://127.0.0.1:9/chat",
        "secret": SECRET,
        "tools": [
            {
                "name": "Live Chat Handoff",
                "tool_name": "live_handoff",
                "type": "human_handoff",
                "description": "Transfer",
                "output_instructions": "Say so",
            },
            {"name": "Search", "tool_name": "search_kb", "type": "knowledge_base"},
        ],
        "knowledge_bases": [
            {
                "name": "Handbook",
                "type": "file",
                "documents": [
                    {"title": "PTO", "text": "15 days.\n\nCarry over 5."},
                    {"title": "Expenses", "text": "Receipts over $25."},
                ],
            }
        ],
    }
    body.update(overrides)
    return body
