import factory

from apps.bots.models import Bot, BotTool, KnowledgeBase, KnowledgeDocument, new_object_id


class BotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Bot
        skip_postgeneration_save = True

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


def rubric_body(agent_id: str, **overrides) -> dict:
    body = {
        "agent_id": agent_id,
        "name": "Support rubric",
        "description": "How support answers are judged",
        "severity_definitions": {"high": "Critical", "medium": "Moderate", "low": "Minor"},
        "rules": [
            {"id": "BRIEF_RESPONSES", "name": "Brief, Focused Responses", "severity": "medium",
             "category": "response_quality", "description": "Concise answers",
             "prompt_reference": "Section: Communication Style",
             "evaluation_criteria": {"pass_conditions": ["Under 3 sentences"], "fail_conditions": ["Filler"]},
             "examples": {"violation": "Well, so...", "correct": "15 days."},
             "component_scope": "prompt", "component_ids": [], "component_names": []},
            {"id": "USES_KB", "name": "Uses the handbook", "severity": "high", "component_scope": "knowledge_base",
             "evaluation_criteria": {"pass_conditions": ["Cites the handbook"]}, "component_names": ["Handbook"]},
        ],
    }
    body.update(overrides)
    return body


def make_test_set_payload(agent_id: str, **overrides) -> dict:
    body = {
        "agent_id": agent_id,
        "name": "Support test set",
        "description": "Questions",
        "items": [
            {"type": "single_turn", "name": "PTO Policy Inquiry", "inputs": {"message": "What is our PTO policy?"},
             "expected": {"success_criteria": ["Mentions 15 days"], "should_use_tools": ["search_kb"],
                          "should_not_use_tools": ["live_handoff"], "expected_outcome": "PTO info"},
             "tags": ["hr", "policy"], "priority": "high"},
            {"type": "scenario", "name": "Carry-over chat",
             "inputs": {"persona": "An employee", "initial_message": "Hi, about PTO…",
                        "scripted_turns": ["How many days carry over?", "Merci — and the rest?"]},
             "expected": {"success_criteria": ["Says 5 days"]}, "tags": [], "priority": "medium"},
        ],
    }
    body.update(overrides)
    return body
