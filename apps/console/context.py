"""The console pages' layout context: the one in core, under the name the console's views use."""

from apps.core.http.pages import layout_context as console_context

__all__ = ["console_context"]
