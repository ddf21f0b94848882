"""evalsite/warmup.py: what a gunicorn worker loads before its first request."""

import subprocess
import sys

from django.conf import settings

from evalsite.warmup import _project_templates

# A fresh interpreter: this test process has imported scipy and compiled templates already.
PROBE = """
import sys, django
django.setup()
from django.template import engines
from django.urls import get_resolver
from evalsite.warmup import warm
assert "scipy.stats" not in sys.modules, "scipy before warm(): the probe would prove nothing"
failed = warm()
loader = engines.all()[0].engine.template_loaders[0]
cached = {key.split(":", 1)[0] if isinstance(key, str) else key for key in loader.get_template_cache}
console = get_resolver().namespace_dict["console"][1]
print(failed, "scipy.stats" in sys.modules, "scipy.optimize" in sys.modules,
      "console/run_detail.html" in cached, bool(console._reverse_dict), sep="|")
"""


def test_warm_loads_scipy_the_reverse_tables_and_every_project_template_in_a_fresh_process():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=settings.BASE_DIR
    ).stdout.strip()
    assert out == "[]|True|True|True|True"


def test_the_project_templates_are_the_files_under_the_template_dirs():
    names = _project_templates()
    assert "console/run_detail.html" in names
    assert "console/run_compare.html" in names
    assert all(name.endswith(".html") and not name.startswith("/") for name in names)
