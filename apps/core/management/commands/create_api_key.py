from django.core.management.base import BaseCommand, CommandError

from apps.core.audit.context import audit_actor
from apps.core.errors import InvalidInputError
from apps.core.models import ALL_SCOPES, DEFAULT_KEY_SCOPES, DEFAULT_PROJECT_SLUG, Project
from apps.core.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a user (created if missing) and print it. The key is shown only once."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username that owns the key")
        parser.add_argument(
            "--staff",
            action="store_true",
            help="make the user staff; the key then gets every scope unless --scopes says otherwise",
        )
        parser.add_argument(
            "--scopes",
            default=None,
            help=f"comma-separated, from {', '.join(ALL_SCOPES)} "
            f"(default: {','.join(DEFAULT_KEY_SCOPES)}); capped by the user's role in the project: "
            "review (human reviews, review queues) needs reviewer, ingest, evaluate and configure editor, "
            "admin a project admin (or, for a user in no project, staff)",
        )
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument(
            "--project",
            default=DEFAULT_PROJECT_SLUG,
            help="slug of the project the key acts in, and only in (default: %(default)s)",
        )

    def handle(self, *args, user, staff, scopes, name, project, **options):
        requested = None if scopes is None else scopes.split(",")
        found = Project.objects.filter(slug=project).first()
        if found is None:
            known = ", ".join(Project.objects.values_list("slug", flat=True))
            raise CommandError(f"No project {project!r}. Projects: {known}.")
        try:
            with audit_actor("manage.py create_api_key"):
                _api_key, raw_key = api_key_create(
                    username=user, staff=staff, name=name, scopes=requested, project=found
                )
        except InvalidInputError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(raw_key)
