"""The abstract head / version pair. Concrete heads keep their own primary key, their foreign key
to the bot and their rows; a head's version model is made by `snapshot_version_model`, whose
foreign key to the head has related_name="versions", which is how the shared code finds one from
the other."""

from django.db import models


class VersionedHead(models.Model):
    """The editable head. Every change is published as a version row; runs point at a version,
    never at this moving head."""

    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    # The newest published version; the row lock on the head serialises publishers.
    current_version = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def __str__(self):
        return self.name

    @classmethod
    def version_model(cls) -> type["SnapshotVersion"]:
        return cls.versions.rel.related_model


class SnapshotVersion(models.Model):
    """An immutable snapshot of a head in its contract shape, with who published it and why."""

    version = models.PositiveIntegerField()
    snapshot = models.JSONField()
    changelog = models.TextField(blank=True, default="")
    author = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    def __str__(self):
        return f"{getattr(self, self.head_field().attname)} v{self.version}"

    @classmethod
    def head_field(cls) -> models.ForeignKey:
        """The foreign key to the head (the one with related_name="versions")."""
        return next(f for f in cls._meta.fields if f.is_relation and f.remote_field.related_name == "versions")


def snapshot_version_model(head_model: type[VersionedHead], *, field: str) -> type[SnapshotVersion]:
    """The concrete version model of `head_model`, named after it (Rubric -> RubricVersion), with its
    foreign key `field` to the head; assign it to that name in the head's models module so
    migrations find it there. Newest first within a head, one row per (head, version)."""
    name = f"{head_model.__name__}Version"
    noun = head_model._meta.verbose_name
    meta = type(
        "Meta",
        (),
        {
            "ordering": [f"{field}_id", "-version"],
            "constraints": [models.UniqueConstraint(fields=[field, "version"], name=f"{name.lower()}_unique_version")],
        },
    )
    return type(
        name,
        (SnapshotVersion,),
        {
            "__module__": head_model.__module__,
            "__doc__": f"The {noun} at one published version, in the contract's shape.",
            "__qualname__": name,
            field: models.ForeignKey(head_model, on_delete=models.CASCADE, related_name="versions"),
            "Meta": meta,
        },
    )
