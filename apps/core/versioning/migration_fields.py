"""The abstract head / version pair as the initial migrations of rubrics and test sets created it,
so those two migrations state it once.

FROZEN: applied migrations build their tables from these functions, so they must never change, even
when the abstract models do. A change to the models gets a new migration in each app, written out in
full by makemigrations; it never edits this module. Each call returns new field instances, since a
migration operation owns the fields it is given."""

import uuid

import django.db.models.deletion
from django.db import migrations, models


def create_head_model(name: str, *, pk: str, own: tuple = (), bot: models.ForeignKey) -> migrations.CreateModel:
    """The CreateModel of a head model `name`: its uuid primary key `pk`, name and description, the
    app's `own` (name, field) pairs, the version counter and timestamps, then `bot`, its foreign key
    `agent` (given by the app, which knows the bots app): the column order of the initial migrations."""
    return migrations.CreateModel(
        name=name,
        fields=[
            (pk, models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
            ("name", models.CharField(max_length=255)),
            ("description", models.TextField(blank=True, default="")),
            *own,
            ("current_version", models.PositiveIntegerField(default=0, editable=False)),
            ("created_at", models.DateTimeField(auto_now_add=True)),
            ("updated_at", models.DateTimeField(auto_now=True)),
            ("agent", bot),
        ],
        options={"ordering": ["name", pk]},
    )


def create_version_model(name: str, *, head: str, to: str) -> migrations.CreateModel:
    """The CreateModel of a head's version model `name`, whose foreign key `head` points at `to`."""
    return migrations.CreateModel(
        name=name,
        fields=[
            ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            ("version", models.PositiveIntegerField()),
            ("snapshot", models.JSONField()),
            ("changelog", models.TextField(blank=True, default="")),
            ("author", models.CharField(blank=True, default="", max_length=150)),
            ("created_at", models.DateTimeField(auto_now_add=True)),
            (head, models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="versions", to=to)),
        ],
        options={
            "ordering": [f"{head}_id", "-version"],
            "constraints": [models.UniqueConstraint(fields=(head, "version"), name=f"{name.lower()}_unique_version")],
        },
    )
