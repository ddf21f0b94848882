"""What a person may do in the console, by their role in the session's project (apps.core.projects):
viewer reads; reviewer also reviews verdicts and works review queues; editor also launches, re-runs
and cancels runs (and edits bots, rubrics, test sets and rules in the admin); admin also deletes and
manages members and keys. A person with no role there (someone in no project yet, in `default`) is
held to the scopes their session has, as before projects."""

from apps.core.models import SCOPE_ADMIN, SCOPE_CONFIGURE, SCOPE_EVALUATE, SCOPE_REVIEW, ProjectRole
from apps.core.projects.resolution import request_access

# Each action: the least role it needs, and the session scope that stands for it without a role.
REVIEW = (ProjectRole.REVIEWER, SCOPE_REVIEW)
EDIT = (ProjectRole.EDITOR, SCOPE_EVALUATE)
# Bots, rubrics and test sets: what the API's `configure` scope allows.
CONFIGURE = (ProjectRole.EDITOR, SCOPE_CONFIGURE)
ADMINISTER = (ProjectRole.ADMIN, SCOPE_ADMIN)

# What each action lets a person do, for the page that refuses them.
ACTION_WORDS = {
    REVIEW: "review verdicts and manage review queues",
    EDIT: "launch, cancel or re-run evaluation runs",
    CONFIGURE: "change bots, rubrics and test sets",
    ADMINISTER: "change this project's configuration",
}


def may(request, action: tuple[ProjectRole, str]) -> bool:
    role, scope = action
    access = request_access(request)
    if access.role is not None:
        return access.role.at_least(role)
    return scope in access.scopes
