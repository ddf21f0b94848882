from django.core.management.base import BaseCommand, CommandError

from apps.bots.services import bot_secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored bot secret with the first key of EVALSITE_SECRET_KEY_ENCRYPTION. Run it after "
        "putting a new key first (keep the old ones listed until it has run), then drop the old keys."
    )

    def handle(self, *args, **options):
        done, unreadable = bot_secrets_reencrypt()
        self.stdout.write(f"re-encrypted {done} bot secret(s) with the current key")
        if unreadable:
            # The ids, never the tokens: the operator needs to know which bots to fix.
            raise CommandError(
                f"{len(unreadable)} secret(s) could not be decrypted with any configured key, left "
                f"unchanged: bots {', '.join(unreadable)}"
            )
