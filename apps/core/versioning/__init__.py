"""Versioned heads: an editable head (rubric, test set) whose every save is published as an
immutable snapshot row, so runs can point at a version instead of the moving head.

The rules every kind of head shares live here once; an app adds only what differs, its content
schema, its snapshot shape and how its head rows are written:

- models: the abstract head / version model pair; `snapshot_version_model` makes a head's version
  model (RubricVersion = snapshot_version_model(Rubric, field="rubric"));
- migration_fields: the same pair as the initial migrations created it (frozen: applied
  migrations use it);
- schemas: `input_schemas` makes the create and update bodies from the app's content schema;
- services: `version_publish` (row lock, 409 on a stale base version, no-op on equal content,
  changelog and author), `version_head_create` and `version_restore`;
- selectors: a version, its contract-shaped data, the version list;
- api: ETags and If-Match for the REST views, and `version_views`, the version list and version
  detail views of a head;
- diff and admin: `VersionedHeadAdmin` (changelist, editor, the version history page with diff and
  restore, the read-only version admin) and `ContentInline` for the head's rows.
"""
