"""Projects: who belongs where, and which project a request acts in.

- `access`     a user's role in a project and the scopes it allows (keys and sessions);
- `resolution` the request's project: `project_of(request)` (the one accessor views use) and the
               session's choice (`session_project_select`);
- `services`   writes: projects, their settings (retention, redaction) and memberships;
- `selectors`  reads: the projects a user may see, one project by slug, its members;
- `api/`       `/api/v1/projects...`.
"""
