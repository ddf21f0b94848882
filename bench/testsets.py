"""Publishing and importing large test sets, in-process through the real API views.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/testsets.py [--items 2000]

Creates a throwaway test database (SQLite file or `test_<name>` on PostgreSQL), then times: creating
a test set of N items (POST), a PUT that changes one item (publishes version 2), a no-op PUT, the
CSV export and the CSV re-import as a new test set. Prints one line per step.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the in-process client's host
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from rest_framework.test import APIClient

    from apps.bots.models import Bot
    from apps.core.services import api_key_create

    old = setup_databases(verbosity=0, interactive=False)
    try:
        _key, raw = api_key_create(username="bench", staff=True)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        # The key's project (`default`), where its requests look the bot up.
        bot = Bot.objects.create(name="bench", project=_key.project)
        items = [
            {
                "type": "scenario",
                "name": f"Scenario {i}",
                "inputs": {
                    "persona": "An employee",
                    "initial_message": f"Question {i}",
                    "scripted_turns": ["More?", "Thanks"],
                },
                "expected": {"success_criteria": ["Answers", "Cites the handbook"], "should_use_tools": ["search_kb"]},
                "tags": ["hr"],
                "priority": "medium",
            }
            if i % 2
            else {
                "type": "single_turn",
                "name": f"Question {i}",
                "inputs": {"message": f"What about {i}?"},
                "expected": {"success_criteria": ["Answers"]},
                "tags": ["hr"],
            }
            for i in range(args.items)
        ]
        body = {"agent_id": bot.agent_id, "name": "bench", "items": items}

        def timed(label, call, expect):
            start = time.perf_counter()
            response = call()
            elapsed = time.perf_counter() - start
            assert response.status_code == expect, (response.status_code, response.content[:300])
            print(f"{label:<42} {elapsed * 1000:8.0f} ms  ({args.items / elapsed:8.0f} items/s)")
            return response

        created = timed(
            "POST /test-sets (version 1)", lambda: client.post("/api/v1/test-sets", body, format="json"), 201
        ).json()
        tid = created["test_set_id"]
        changed = {**created, "version": 1}
        changed["items"] = [dict(i) for i in created["items"]]
        changed["items"][0] = {**changed["items"][0], "name": "Renamed"}
        timed(
            "PUT one item changed (version 2)",
            lambda: client.put(f"/api/v1/test-sets/{tid}", changed, format="json"),
            200,
        )
        same = {**changed, "version": 2}
        timed("PUT unchanged (no version)", lambda: client.put(f"/api/v1/test-sets/{tid}", same, format="json"), 200)
        csv_file = timed(
            "GET export?format=csv", lambda: client.get(f"/api/v1/test-sets/{tid}/export?format=csv"), 200
        ).content
        timed(
            "POST import CSV as a new test set",
            lambda: client.post(
                f"/api/v1/test-sets/import?format=csv&agent_id={bot.agent_id}&name=copy",
                data=csv_file,
                content_type="text/csv",
            ),
            201,
        )
        print(f"database: {connection.vendor}, items: {args.items}, CSV size: {len(csv_file) / 1024:.0f} KiB")
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
