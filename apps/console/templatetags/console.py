import json

from django import template

from apps.core.pricing import amount_text

register = template.Library()


@register.filter
def signed(value, digits: int = 2) -> str:
    """A change with its sign (+0.25, -0.50, 0.00): floatformat drops the plus."""
    if value is None or value == "":
        return "—"
    value = float(value)
    return f"{value:+.{int(digits)}f}" if value else f"{0:.{int(digits)}f}"


@register.filter
def usd(cost) -> str:
    """A cost (SpendSplit) as "$0.0123", with the unpriced calls beside it: never "$0" for calls
    nobody could price (apps.core.pricing)."""
    if cost is None:
        return "—"
    text = usd_amount(cost.total)
    if cost.unpriced_calls:
        text += f" + {cost.unpriced_calls} unpriced"
    return text


@register.filter
def usd_amount(amount) -> str:
    return "—" if amount is None else f"${amount_text(amount)}"


@register.filter
def words(value) -> str:
    """A metric's name as words (context_recall: context recall)."""
    return str(value or "").replace("_", " ")


@register.filter
def as_json(value) -> str:
    """A tool call's arguments or result as indented JSON (what the API returns and a reader can
    paste elsewhere), not a Python repr with single quotes and long strings broken in pieces. A
    string that holds a JSON object or array is shown as that JSON; the text is escaped by the
    template like any other."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                value = json.loads(stripped)
            except ValueError:
                pass
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


DEMO_ADAPTER = "demo"


@register.filter
def bot_model(run) -> str:
    """What answered in a run: the model its bot was configured with, except for the built-in demo
    adapter, which uses none (a model set on the bot is ignored by it, so naming it would mislead)."""
    if (run.bot_snapshot or {}).get("adapter") == DEMO_ADAPTER:
        return "offline demo bot (built-in, no language model)"
    return " ".join(part for part in (run.bot_llm_provider, run.bot_llm_model) if part) or "—"
