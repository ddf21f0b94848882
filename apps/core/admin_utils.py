import json

from django.utils.html import format_html


def pretty_json(value) -> str:
    """Read-only JSON for the admin: indented, unicode kept readable, escaped by format_html."""
    if value is None:
        return "—"
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>',
                       json.dumps(value, indent=2, ensure_ascii=False, default=str))
