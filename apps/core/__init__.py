"""What every app needs, grouped by concern (imports only run downwards from the apps above; the
packages here do not import each other in a cycle, which lint-imports checks):

- api/        the REST edge: `handlers` (every error as {"detail": ...}), `openapi` (the document's
              auth scheme and error answers), `validation` (input types and checks, validate_body),
              `responses` and `schemas` (answers built by Out models), DRF's `negotiation`,
              `parsers`, `renderers`, `pagination`;
- auth/       who may do what: `authentication` (API keys, sessions), `permissions` (scopes),
              `login_throttle`, `crypto` (credentials encrypted at rest);
- admin/      the ApiKey admin, and `fields` / `utils` every app's admin uses;
- http/       `middleware`, `views` (probes, API docs, error pages), `pages` (the console layout
              that pages of lower apps share);
- llm/        `client` (the only importer of `openai`), `prompting` (untrusted text in prompts),
              `fingerprint` (what judged), each key's `usage` and `quotas` (`quota_cache` is the
              quota counters' cache backend);
- projects/   which project a request acts in (`resolution.project_of`, `request_access`), roles
              and the scopes they allow (`access`), project and membership writes and reads;
- metrics/    Prometheus: `access` (who may scrape) and `labels` (bounded label values);
- versioning/ editable heads with immutable version snapshots (rubrics, test sets).

Flat modules are one concept each: `models` / `services` / `selectors` as in every app
(projects, memberships, API keys and their daily usage), `errors` (domain errors; the API edge maps them in
api/handlers), `outbound` (the guard for requests to user-configured addresses), `charts` (SVG
charts for the console and the metrics-query page), `demo` (the demo-data registry), `sampling`,
`spreadsheet` (CSV safe to open), `text` (frozen tokenising versions).
"""
