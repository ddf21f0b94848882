from django.core.management.base import BaseCommand, CommandError

from apps.traces import partitions


class Command(BaseCommand):
    help = (
        "PostgreSQL: list the partitions of every partitioned table (the tool calls, the Score rows of agentic and "
        "RAG evaluations) with their id ranges and size on disk; --ensure creates the ones ingestion needs next, what "
        "Celery beat does every minute."
    )

    def add_arguments(self, parser):
        parser.add_argument("--ensure", action="store_true", help="create partitions ahead of the highest ids")
        parser.add_argument("--table", metavar="NAME", help="only this partitioned table (e.g. scores_score_agentic)")
        parser.add_argument(
            "--upto", type=int, metavar="ID", help="with --ensure and --table: ahead of this id instead (bulk loads)"
        )

    def handle(self, *args, ensure=False, table=None, upto=None, **options):
        if upto is not None and not (ensure and table):
            raise CommandError("--upto goes with --ensure and --table")
        tables = [t for t in partitions.registered() if t.partitioned() and table in (None, t.parent)]
        if not tables:
            if table:
                known = ", ".join(t.parent for t in partitions.registered())
                raise CommandError(f"{table} is not a partitioned table here (these are: {known})")
            raise CommandError("nothing is partitioned here (PostgreSQL only, migrations traces.0016, scores.0003)")
        for t in tables:
            if ensure:
                created = t.ensure(upto=upto)
                self.stdout.write(f"{t.parent}: created {created} partition{'' if created == 1 else 's'}")
            for p in t.sizes():
                self.stdout.write(f"{p.name:<36} {p.range:<40} {p.size_mb:>10.1f} MB")
