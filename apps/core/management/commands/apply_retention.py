from django.core.management.base import BaseCommand, CommandError

from apps.core.audit.context import audit_actor
from apps.core.models import Project
from apps.core.retention import retention_apply, retention_plan


class Command(BaseCommand):
    help = (
        "Delete what each project's retention settings have expired (what Celery beat does hourly); "
        "--dry-run lists what would go."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
        parser.add_argument("--project", metavar="SLUG", help="only this project")

    def handle(self, *args, dry_run=False, project=None, **options):
        if project and not Project.objects.filter(slug=project).exists():
            raise CommandError(f"no project {project!r}")
        with audit_actor("manage.py apply_retention"):
            expiries = retention_plan(project=project) if dry_run else retention_apply(project=project)
        if not expiries:
            self.stdout.write("No project has a retention period set.")
            return
        verb = "would delete" if dry_run else "deleted"
        for e in expiries:
            if not e.project:
                self.stdout.write(f"all projects: {'would drop' if dry_run else 'dropped'} {e.count} {e.kind}")
                continue
            self.stdout.write(f"{e.project}: {verb} {e.count} {e.kind} created before {e.before:%Y-%m-%d %H:%M} UTC")
