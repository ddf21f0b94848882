from django.core.management.base import BaseCommand, CommandError

from apps.traces import partitions


class Command(BaseCommand):
    help = (
        "PostgreSQL: list the partitions of the tool calls (trace id ranges, size on disk); --ensure creates "
        "the ones ingestion needs next, what Celery beat does every minute."
    )

    def add_arguments(self, parser):
        parser.add_argument("--ensure", action="store_true", help="create partitions ahead of the highest trace id")
        parser.add_argument(
            "--upto", type=int, metavar="TRACE_ID", help="with --ensure: ahead of this trace id instead (bulk loads)"
        )

    def handle(self, *args, ensure=False, upto=None, **options):
        if upto is not None and not ensure:
            raise CommandError("--upto goes with --ensure")
        if not partitions.partitioned():
            raise CommandError("the tool calls are not partitioned here (PostgreSQL only, from migration traces.0016)")
        if ensure:
            created = partitions.partitions_ensure(upto=upto)
            self.stdout.write(f"created {created} partition{'' if created == 1 else 's'}")
        for p in partitions.partition_sizes():
            self.stdout.write(f"{p.name:<32} {p.range:<24} {p.size_mb:>10.1f} MB")
