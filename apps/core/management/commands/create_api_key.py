from django.core.management.base import BaseCommand

from apps.core.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a user (created if missing) and print it. The key is shown only once."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username that owns the key")
        parser.add_argument("--staff", action="store_true", help="make the user staff (needed for destructive calls)")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args, user, staff, name, **options):
        _api_key, raw_key = api_key_create(username=user, staff=staff, name=name)
        self.stdout.write(raw_key)
