"""The versioning core that rubrics and test sets share (apps.core.versioning): one abstract model
pair, one publishing path and one admin for both kinds of head."""

import pytest
from django.core.management import call_command
from django.test import RequestFactory

from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.models import Project
from apps.core.selectors import object_get
from apps.core.versioning.api import expected_version
from apps.core.versioning.models import SnapshotVersion, VersionedHead
from apps.core.versioning.selectors import version_list
from apps.rubrics import services as rubric_services
from apps.rubrics.models import Rubric, RubricVersion
from apps.rubrics.schemas import RubricContent, RubricCreateIn, RubricUpdateIn
from apps.testsets import services as testset_services
from apps.testsets.models import Dataset, TestSet, TestSetVersion
from apps.testsets.schemas import TestSetContent, TestSetCreateIn, TestSetUpdateIn
from tests.bots.factories import BotFactory
from tests.rubrics.factories import rubric_body
from tests.testsets.factories import make_test_set_payload


@pytest.mark.parametrize(
    "head, version, tables, head_field",
    [
        (Rubric, RubricVersion, ("rubrics_rubric", "rubrics_rubricversion"), "rubric"),
        (TestSet, TestSetVersion, ("testsets_testset", "testsets_testsetversion"), "test_set"),
    ],
)
def test_both_kinds_extend_the_shared_pair_and_keep_their_tables(head, version, tables, head_field):
    assert issubclass(head, VersionedHead) and issubclass(version, SnapshotVersion)
    # Existing databases hold these tables: the shared base must not rename them.
    assert (head._meta.db_table, version._meta.db_table) == tables
    assert head.version_model() is version and version.head_field().name == head_field
    # snapshot_version_model keeps what the hand-written version models declared.
    assert version.__module__ == head.__module__ and version._meta.ordering == [f"{head_field}_id", "-version"]
    assert [c.name for c in version._meta.constraints] == [f"{version._meta.model_name}_unique_version"]


@pytest.mark.django_db
def test_the_frozen_migration_helpers_state_what_the_models_declare():
    # The initial migrations build the head and version models with apps.core.versioning.migration_fields:
    # a difference from the models would be a missing migration.
    call_command("makemigrations", "rubrics", "testsets", check=True, dry_run=True, verbosity=0)


@pytest.mark.parametrize(
    "create_in, update_in, name",
    [
        (RubricCreateIn, RubricUpdateIn, "Rubric"),
        (TestSetCreateIn, TestSetUpdateIn, "TestSet"),
    ],
)
def test_input_schemas_ignore_a_version_sent_back_on_create_and_read_it_on_update(create_in, update_in, name):
    assert (create_in.__name__, update_in.__name__) == (f"{name}CreateIn", f"{name}UpdateIn")
    body = rubric_body("a" * 24) if name == "Rubric" else make_test_set_payload("a" * 24)
    assert "version" not in create_in.model_fields and create_in.model_validate({**body, "version": 7})
    assert update_in.model_validate({**body, "version": 7, "changelog": None}).version == 7
    assert update_in.model_validate({**body, "version": 7, "changelog": None}).changelog == ""


@pytest.mark.parametrize(
    "if_match, body_version, expected",
    [
        (None, None, None),
        (None, 4, 4),
        ('"v3"', None, 3),
        ('W/"v3"', 3, 3),
        ("*", 2, 2),
    ],
)
def test_the_base_version_comes_from_if_match_or_the_body(if_match, body_version, expected):
    headers = {"HTTP_IF_MATCH": if_match} if if_match is not None else {}
    assert expected_version(RequestFactory().put("/", **headers), body_version) == expected


def test_if_match_and_body_naming_different_versions_is_refused():
    with pytest.raises(InvalidInputError, match="different versions"):
        expected_version(RequestFactory().put("/", HTTP_IF_MATCH='"v3"'), 2)


@pytest.mark.django_db
def test_a_malformed_id_names_no_row():
    with pytest.raises(NotFoundError, match="No test set not-a-uuid"):
        object_get(TestSet.objects.all(), "not-a-uuid")


@pytest.fixture
def heads(db):
    bot = BotFactory()
    rubric = rubric_services.rubric_create(
        project=Project.objects.default(), content=RubricContent.model_validate(rubric_body(bot.agent_id))
    )
    test_set = testset_services.testset_create(
        project=Project.objects.default(), content=TestSetContent.model_validate(make_test_set_payload(bot.agent_id))
    )
    return rubric, test_set


def test_version_summaries_name_the_head_and_count_its_rows(heads):
    rubric, test_set = heads
    assert [
        (v["rubric_id"], v["rule_count"]) for v in version_list(rubric, count_key="rule_count", children_key="rules")
    ] == [(str(rubric.pk), 2)]
    assert [v["item_count"] for v in version_list(test_set, count_key="item_count", children_key="items")] == [
        len(make_test_set_payload("x")["items"])
    ]


@pytest.mark.parametrize("app", ["rubrics", "testsets"])
def test_published_versions_are_read_only_in_the_admin(admin_client, heads, app):
    head = heads[0] if app == "rubrics" else heads[1]
    model = "rubricversion" if app == "rubrics" else "testsetversion"
    version = head.versions.get()
    listing = admin_client.get(f"/admin/{app}/{model}/")
    assert listing.status_code == 200 and head.name in listing.content.decode()
    page = admin_client.get(f"/admin/{app}/{model}/{version.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "&quot;version&quot;: 1" in html and 'name="_save"' not in html
    assert admin_client.get(f"/admin/{app}/{model}/add/").status_code == 403


def test_of_bot_reads_one_bots_rows_with_their_bot(heads, django_assert_num_queries):
    rubric, test_set = heads
    other = BotFactory()
    testset_services.testset_create(
        project=Project.objects.default(), content=TestSetContent.model_validate(make_test_set_payload(other.agent_id))
    )
    assert list(TestSet.objects.of_bot(test_set.bot.agent_id)) == [test_set]
    assert TestSet.objects.of_bot().count() == 2 and list(Rubric.objects.of_bot(other.agent_id)) == []
    assert list(Dataset.objects.of_bot(other.agent_id)) == []
    expected = [rubric.bot.agent_id]
    with django_assert_num_queries(1):
        assert [r.bot.agent_id for r in Rubric.objects.of_bot()] == expected


@pytest.mark.parametrize("app, model, title", [("rubrics", "rubric", "Rules"), ("testsets", "testset", "Items")])
def test_the_head_changelist_counts_its_rows(admin_client, heads, app, model, title):
    head = heads[0] if app == "rubrics" else heads[1]
    html = admin_client.get(f"/admin/{app}/{model}/").content.decode()
    assert f">{title}</a>" in html
    assert f'<td class="field-row_count">{head.versions.get().snapshot[title.lower()].__len__()}</td>' in html
