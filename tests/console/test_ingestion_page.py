"""/console/ingestion/: the ledger per day and source, with its reasons and whether each day balances.
The browser test takes a screenshot (test-output/screenshots/ingestion.png)."""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from apps.core.models import ProjectRole
from apps.traces.ledger import ingestion_record
from apps.traces.models import IngestionEntry
from tests.console.browser import SCREENSHOTS, needs_chromium
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory

URL = "/console/ingestion/"


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def _day_rows(response, day: str) -> str:
    match = re.search(
        rf'<tbody class="ledger-day[^"]*" data-day="{day}">(.*?)</tbody>', response.content.decode(), re.S
    )
    assert match, f"no rows for {day}"
    return match.group(1)


@pytest.fixture
def superuser_client(client, db):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def ledger(db):
    today = timezone.now().replace(hour=9, minute=0, second=0, microsecond=0)
    ingestion_record(
        project=None,
        source="otlp",
        received=120,
        stored=100,
        duplicate=12,
        rejected={"too_deep": 3, "nul_character": 1},
        dropped={"orphan": 4},
        at=today,
    )
    ingestion_record(
        project=None, source="rest", received=40, stored=36, duplicate=2, rejected={"conflict": 2}, at=today
    )
    ingestion_record(
        project=None,
        source="batch",
        received=7,
        stored=5,
        duplicate=1,
        rejected={"invalid": 1},
        at=today - timedelta(days=1),
    )
    ingestion_record(project=None, source="online_evaluation", sampled=9, evaluated=6, skipped=1, errored=1, at=today)
    return today


def test_the_page_shows_each_day_per_source_with_reasons_and_check_marks(superuser_client, ledger):
    response = superuser_client.get(URL)
    assert response.status_code == 200
    today = ledger.strftime("%Y-%m-%d")
    yesterday = (ledger - timedelta(days=1)).strftime("%Y-%m-%d")
    rows = _day_rows(response, today)
    assert 'data-source="otlp"' in rows and 'data-source="rest"' in rows and 'data-source="batch"' not in rows
    otlp = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", rows.split('data-source="otlp"')[1].split("</tr>")[0]))
    assert "120 100 12 4 too_deep 3 nul_character 1 4 orphan 4 ✓" in otlp
    assert 'data-source="batch"' in _day_rows(response, yesterday)
    text = _text(response)
    assert "Over these days" in text and "does not balance" not in text.lower()
    assert text.count("✓") >= 5  # three sources over the window, two today, one yesterday
    # Online evaluation: sampled, evaluated, skipped, errored, pending.
    assert f"{today} 9 6 1 1 1" in text
    assert 'href="/console/ingestion/"' in response.content.decode()  # the navigation link


def test_a_day_that_does_not_balance_says_so(superuser_client, ledger):
    # What a lost item would look like: received, and nothing says what became of it.
    IngestionEntry.objects.create(source="otlp", received=3, stored=1, at=ledger - timedelta(days=2))
    response = superuser_client.get(URL)
    day = (ledger - timedelta(days=2)).strftime("%Y-%m-%d")
    assert 'class="ledger-day unbalanced"' in response.content.decode()
    assert "2 unaccounted" in _day_rows(response, day)
    text = _text(response)
    assert f"Does not balance on 1 day: {day}" in text


def test_since_and_until_choose_the_days(superuser_client, ledger):
    yesterday = (ledger - timedelta(days=1)).date()
    response = superuser_client.get(URL, {"since": yesterday.isoformat(), "until": yesterday.isoformat()})
    assert response.status_code == 200
    body = response.content.decode()
    assert f'data-day="{yesterday.isoformat()}"' in body and f'data-day="{ledger.date().isoformat()}"' not in body
    assert "Last 14 days" in body


def test_old_days_are_outside_the_default_14(superuser_client, ledger):
    ingestion_record(project=None, source="rest", received=5, stored=5, at=ledger - timedelta(days=20))
    body = superuser_client.get(URL).content.decode()
    assert f'data-day="{(ledger - timedelta(days=20)).date().isoformat()}"' not in body


def test_dates_that_do_not_make_a_window_are_shown_and_ignored(superuser_client, ledger):
    response = superuser_client.get(URL, {"since": "2026-03-10", "until": "2026-03-01"})
    assert response.status_code == 200
    assert "must not be before From" in response.content.decode()
    assert f'data-day="{ledger.date().isoformat()}"' in response.content.decode()  # the default window
    assert superuser_client.get(URL, {"since": "not a date"}).status_code == 200
    assert "must be between 1970 and 9000" in superuser_client.get(URL, {"until": "9999-12-31"}).content.decode()
    # Only a start, long ago: the page shows at most a year of days.
    assert superuser_client.get(URL, {"since": "1971-01-01"}).status_code == 200


def test_an_empty_ledger_says_so(superuser_client):
    assert "Nothing came in on these days." in superuser_client.get(URL).content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client, db):
    response = client.get(URL)
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@needs_chromium
def test_screenshot(browser, live_server, staff_user):
    staff_user.is_superuser = True  # an admin of every project: `default`'s ledger is shown
    staff_user.save()
    now = timezone.now().replace(hour=10, minute=0, second=0, microsecond=0)
    for days in range(5):
        at = now - timedelta(days=days)
        ingestion_record(
            project=None,
            source="otlp",
            received=900 + days,
            stored=850,
            duplicate=30 + days,
            rejected={"too_deep": 5, "integer_out_of_range": 3},
            dropped={"orphan": 12},
            at=at,
        )
        ingestion_record(
            project=None,
            source="rest",
            received=130,
            stored=120,
            duplicate=6,
            rejected={"conflict": 3, "not_found": 1},
            at=at,
        )
        if days % 2:
            ingestion_record(project=None, source="batch", received=40, stored=38, duplicate=2, at=at)
        ingestion_record(
            project=None, source="online_evaluation", sampled=20, evaluated=17, skipped=1, errored=days % 2, at=at
        )
    IngestionEntry.objects.create(source="otlp", received=7, stored=2, at=now - timedelta(days=3))
    client = Client()
    client.force_login(staff_user)
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie(
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"}
    )
    browser.set_window_size(1366, 1800)
    browser.get(f"{live_server.url}{URL}")
    assert "Does not balance on 1 day" in browser.page_source
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "ingestion.png"))


def _member_client(client, project, role, username):
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    client.force_login(user)
    return client


def test_a_projects_admin_sees_its_ledger_and_never_anothers(client, ledger):
    """`default` holds the fixture's counts; an admin of `other` sees other's ledger only."""
    other = ProjectFactory(slug="other", name="Other")
    ingestion_record(project=other, source="otlp", received=77, stored=70, duplicate=7, at=ledger)
    page = _member_client(client, other, ProjectRole.ADMIN, "other-admin").get(URL)
    assert page.status_code == 200
    assert 'id="ledger-hidden"' not in page.content.decode()
    otlp = _day_rows(page, ledger.strftime("%Y-%m-%d"))
    assert "77" in otlp and "120" not in otlp and 'data-source="rest"' not in otlp
    text = _text(page)
    # default's numbers (120 otlp, 40 rest, 7 batch, 9 sampled) and reasons appear nowhere.
    assert "too_deep" not in text and "conflict" not in text and "orphan" not in text
    assert " 120 " not in text and " 40 " not in text and f"{ledger.strftime('%Y-%m-%d')} 9 " not in text


def test_a_member_who_is_not_an_admin_sees_the_redaction_counts_only(client, ledger):
    other = ProjectFactory(slug="other", name="Other")
    ingestion_record(project=other, source="rest", received=31, stored=31, at=ledger)
    page = _member_client(client, other, ProjectRole.EDITOR, "other-editor").get(URL)
    assert page.status_code == 200
    text = _text(page)
    assert 'id="ledger-hidden"' in page.content.decode() and 'id="redaction-counts"' in page.content.decode()
    assert "Over these days" not in text and "Per day" not in text and " 31 " not in text


def test_a_superuser_sees_the_chosen_projects_ledger(superuser_client, ledger):
    other = ProjectFactory(slug="other", name="Other")
    ingestion_record(project=other, source="batch", received=55, stored=55, at=ledger)
    session = superuser_client.session
    session["evalsite_project"] = "other"
    session.save()
    text = _text(superuser_client.get(URL))
    assert "Over these days" in text and " 55 " in text and " 120 " not in text
