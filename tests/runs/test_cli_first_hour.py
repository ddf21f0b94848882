"""evalrun for a newcomer (issue 20, item 5): every option says what it does, --help does not load
the heavy numeric and LLM libraries, and every link it prints or writes to JUnit is under
EVALSITE_BASE_URL (by default what `make run` serves)."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from junitparser import JUnitXml

from apps.runs.management.commands.evalrun import Command
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET

ROOT = Path(__file__).resolve().parents[2]


def test_every_evalrun_option_has_help_text():
    parser = Command().create_parser("manage.py", "evalrun")
    own = [
        action
        for action in parser._actions
        if action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)
    ]
    assert len(own) > 20
    undocumented = [action.option_strings for action in own if not (action.help or "").strip()]
    assert undocumented == []


@pytest.mark.subprocess
def test_help_leaves_scipy_numpy_and_openai_unloaded(tmp_path):
    # What made --help take seconds: scipy.stats (~0.85 s) and openai (~0.4 s) imported at module
    # level by modules the app registry loads. They are imported where they are used instead.
    script = (
        "import sys, django, io, contextlib\n"
        "from django.core.management import ManagementUtility\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        ManagementUtility(['manage.py', 'evalrun', '--help']).execute()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert '--fail-under' in out.getvalue(), out.getvalue()\n"
        "heavy = ('scipy', 'scipy.stats', 'numpy', 'openai', 'ragas', 'langgraph')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG"}}
    env.update(
        {"DJANGO_SETTINGS_MODULE": "evalsite.settings", "SECRET_KEY": "x" * 50, "EVALSITE_VAR_DIR": str(tmp_path)}
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.django_db(transaction=True)
def test_printed_links_and_junit_links_are_under_the_base_url(plan, settings, tmp_path, capsys):
    settings.EVALSITE_BASE_URL = "http://127.0.0.1:8123"
    junit = tmp_path / "r.xml"
    call_command(
        "evalrun",
        "--agent",
        PLAN_AGENT,
        "--test-set",
        str(PLAN_TEST_SET),
        "--rubric",
        str(PLAN_RUBRIC),
        "--judge-model",
        "heuristic",
        "--poll",
        "0.01",
        "--timeout",
        "30",
        "--wait",
        "--junit",
        str(junit),
    )
    out = capsys.readouterr().out
    links = [word for word in out.split() if "://" in word]
    assert links and all(link.startswith("http://127.0.0.1:8123/console/") for link in links)
    cases = list(list(JUnitXml.fromfile(str(junit)))[0])
    outputs = [case.system_out for case in cases]
    assert len(outputs) == 6
    assert all("http://127.0.0.1:8123/console/results/" in text for text in outputs)
    assert not any("localhost:8000" in text for text in outputs + [out])
