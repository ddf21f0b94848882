"""The audit trail: an append-only record of every change to configuration and access.

- `context`  who is acting: the request of the moment (AuditContextMiddleware), read lazily when an
             event is recorded, so an API key authenticated by DRF inside the view is seen;
             `audit_actor(...)` names a system actor (a management command, a task);
- `services` `audit_record(...)`, the one writer, and the field snapshots and redaction;
- `registry` `audit_register(Model, ...)`: a signal recorder for configuration rows (bots, rules,
             queues, projects, members, keys) that every app registers its own models with;
- `selectors`/`filters` the reads: a project's events, newest first, filtered;
- `api/`     `GET /api/v1/audit` (project admins).

The model, AuditEvent, is in apps.core.models; migration core.0007 adds the triggers that refuse
UPDATE and DELETE of its rows in the database itself.
"""
