"""Bot secrets move from plaintext to a Fernet token (apps.core.auth.crypto): the new column is filled
from the old one, which is then dropped, so no plaintext secret stays in the database."""

from django.db import migrations, models


def encrypt_secrets(apps, schema_editor):
    from apps.core.auth.crypto import encrypt

    Bot = apps.get_model("bots", "Bot")
    for bot in Bot.objects.exclude(secret="").only("pk", "secret").iterator():
        Bot.objects.filter(pk=bot.pk).update(encrypted_secret=encrypt(bot.secret))


def decrypt_secrets(apps, schema_editor):
    from apps.core.auth.crypto import decrypt

    Bot = apps.get_model("bots", "Bot")
    for bot in Bot.objects.exclude(encrypted_secret="").only("pk", "encrypted_secret").iterator():
        Bot.objects.filter(pk=bot.pk).update(secret=decrypt(bot.encrypted_secret))


class Migration(migrations.Migration):

    dependencies = [
        ("bots", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="bot",
            name="encrypted_secret",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_secrets, decrypt_secrets),
        migrations.RemoveField(
            model_name="bot",
            name="secret",
        ),
    ]
