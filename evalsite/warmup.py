"""What a server process loads once, done before its first request (gunicorn's post_worker_init).

A fresh worker otherwise pays for it in the first requests it answers: the first view of a
finished run took 1.4 s at 100,000 results (bench/results.py) of which the database was 50 ms; the
rest was importing every view with the URLconf, building each URL namespace's reverse table on the
first `{% url %}`, importing scipy for the run's intervals and compiling the page's templates.
"""

from pathlib import Path

from django.conf import settings
from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
from django.urls import URLResolver, get_resolver


def _populate(resolver: URLResolver) -> None:
    """Builds the reverse table of `resolver` and of every namespace under it (reverse() builds
    each lazily, on the first URL named in it)."""
    _ = resolver.reverse_dict
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            _populate(pattern)


def _project_templates() -> list[str]:
    """The names of the project's own templates (settings TEMPLATES DIRS): the console's, the
    admin's overrides and the NL query page. Third-party templates compile when first used."""
    names = []
    for config in settings.TEMPLATES:
        for directory in map(Path, config.get("DIRS", [])):
            names += [str(path.relative_to(directory)) for path in sorted(directory.rglob("*.html"))]
    return names


def warm() -> list[str]:
    """Loads what the first requests would: the URLconf (every view and what it imports), every
    URL namespace's reverse table, scipy's statistics (apps.runs.stats imports them lazily so that
    manage.py commands start fast) and the project's templates, compiled into the cached loader.
    Answers the templates that did not compile (none in a healthy checkout)."""
    resolver = get_resolver()
    _populate(resolver)
    import scipy.optimize  # noqa: F401  (what apps.runs.stats imports lazily)
    import scipy.stats  # noqa: F401

    failed = []
    engine = engines.all()[0]
    for name in _project_templates():
        try:
            engine.get_template(name)
        except (TemplateDoesNotExist, TemplateSyntaxError):
            failed.append(name)
    return failed
