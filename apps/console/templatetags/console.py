from django import template

register = template.Library()


@register.filter
def signed(value, digits: int = 2) -> str:
    """A change with its sign (+0.25, -0.50, 0.00): floatformat drops the plus."""
    if value is None or value == "":
        return "—"
    value = float(value)
    return f"{value:+.{int(digits)}f}" if value else f"{0:.{int(digits)}f}"


@register.filter
def words(value) -> str:
    """A metric's name as words (context_recall: context recall)."""
    return str(value or "").replace("_", " ")
