"""Form fields for editing JSON lists in the admin as plain text, one entry per line."""

from django import forms

from apps.core.api.handlers import pydantic_error_detail


class LinesField(forms.CharField):
    """A list of strings edited as one entry per line; blank lines are dropped."""

    def __init__(self, *args, rows: int = 3, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows, "cols": 60}))
        super().__init__(*args, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


def pydantic_messages(exc) -> list[str]:
    """Readable one-line messages for an admin form error from a pydantic ValidationError."""
    return [
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" if err["loc"] else err["msg"]
        for err in pydantic_error_detail(exc)
    ]
