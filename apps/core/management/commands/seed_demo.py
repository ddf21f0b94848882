import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.core.demo import demo_loaders
from apps.core.models import ApiKey
from apps.core.services import api_key_create, api_key_revoke

DEMO_USERNAME = "demo"
DEMO_KEY_NAME = "make run demo key"


class Command(BaseCommand):
    help = "Create the demo staff user (fresh password and API key each time) and load demo data."

    @transaction.atomic
    def handle(self, *args, **options):
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(username=DEMO_USERNAME)
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.is_staff = True
        user.is_superuser = True
        user.save()
        for old_key in ApiKey.objects.active().filter(user=user, name=DEMO_KEY_NAME):
            api_key_revoke(api_key=old_key)
        _key, raw_key = api_key_create(username=DEMO_USERNAME, staff=True, name=DEMO_KEY_NAME)

        loaded = {}
        for loader in demo_loaders():
            loaded[loader.label] = loader.load()

        self.stdout.write("")
        self.stdout.write("evalsite demo")
        self.stdout.write(f"  admin login : {DEMO_USERNAME} / {password}")
        self.stdout.write(f"  API key     : {raw_key}")
        self.stdout.write("  (a new password and key are made on every start; earlier demo keys are revoked)")
        for label, count in loaded.items():
            self.stdout.write(f"  demo {label}: {count} new")
        self.stdout.write("")
