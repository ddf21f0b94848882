"""Shipped prices: USD per million tokens (input, cached input, output) as the providers' public
price pages gave them on TAKEN_ON. They are a starting point, not a guarantee: check them against
the providers' pages and add a row with a later valid_from where a price changed (docs/costs.md).
valid_from is the day they were taken, the only day we vouch for: a call made before it is unpriced
until someone adds an earlier row."""

from datetime import date
from decimal import Decimal

from django.db import migrations

TAKEN_ON = date(2025, 10, 20)
SOURCES = {
    "openai": "https://openai.com/api/pricing/",
    "anthropic": "https://www.anthropic.com/pricing#api",
    "google": "https://ai.google.dev/gemini-api/docs/pricing",
    "mistral": "https://mistral.ai/pricing#api-pricing",
}
# (provider, model, input, cached input or None, output)
PRICES = [
    ("openai", "gpt-4o", "2.50", "1.25", "10.00"),
    ("openai", "gpt-4o-mini", "0.15", "0.075", "0.60"),
    ("openai", "gpt-4.1", "2.00", "0.50", "8.00"),
    ("openai", "gpt-4.1-mini", "0.40", "0.10", "1.60"),
    ("openai", "gpt-4.1-nano", "0.10", "0.025", "0.40"),
    ("openai", "gpt-5", "1.25", "0.125", "10.00"),
    ("openai", "gpt-5-mini", "0.25", "0.025", "2.00"),
    ("openai", "gpt-5-nano", "0.05", "0.005", "0.40"),
    ("openai", "o3", "2.00", "0.50", "8.00"),
    ("openai", "o3-mini", "1.10", "0.55", "4.40"),
    ("openai", "o4-mini", "1.10", "0.275", "4.40"),
    ("openai", "gpt-4-turbo", "10.00", None, "30.00"),
    ("openai", "gpt-3.5-turbo", "0.50", None, "1.50"),
    ("anthropic", "claude-opus-4-1", "15.00", "1.50", "75.00"),
    ("anthropic", "claude-opus-4", "15.00", "1.50", "75.00"),
    ("anthropic", "claude-sonnet-4-5", "3.00", "0.30", "15.00"),
    ("anthropic", "claude-sonnet-4", "3.00", "0.30", "15.00"),
    ("anthropic", "claude-3-7-sonnet", "3.00", "0.30", "15.00"),
    ("anthropic", "claude-3-5-sonnet", "3.00", "0.30", "15.00"),
    ("anthropic", "claude-haiku-4-5", "1.00", "0.10", "5.00"),
    ("anthropic", "claude-3-5-haiku", "0.80", "0.08", "4.00"),
    ("anthropic", "claude-3-haiku", "0.25", "0.03", "1.25"),
    ("google", "gemini-2.5-pro", "1.25", "0.31", "10.00"),
    ("google", "gemini-2.5-flash", "0.30", "0.075", "2.50"),
    ("google", "gemini-2.5-flash-lite", "0.10", "0.025", "0.40"),
    ("google", "gemini-2.0-flash", "0.10", "0.025", "0.40"),
    ("google", "gemini-1.5-pro", "1.25", None, "5.00"),
    ("google", "gemini-1.5-flash", "0.075", None, "0.30"),
    ("mistral", "mistral-large-latest", "2.00", None, "6.00"),
    ("mistral", "mistral-medium-latest", "0.40", None, "2.00"),
    ("mistral", "mistral-small-latest", "0.10", None, "0.30"),
    ("mistral", "codestral-latest", "0.30", None, "0.90"),
    ("mistral", "open-mistral-nemo", "0.15", None, "0.15"),
    ("mistral", "ministral-8b-latest", "0.10", None, "0.10"),
    ("mistral", "ministral-3b-latest", "0.04", None, "0.04"),
]


def add_prices(apps, schema_editor):
    ModelPrice = apps.get_model("core", "ModelPrice")
    for provider, model, input_price, cached, output in PRICES:
        # get_or_create: an admin who already entered a price for that day keeps theirs.
        ModelPrice.objects.get_or_create(
            model=model,
            valid_from=TAKEN_ON,
            defaults={
                "input_per_mtok": Decimal(input_price),
                "cached_input_per_mtok": None if cached is None else Decimal(cached),
                "output_per_mtok": Decimal(output),
                "source": SOURCES[provider],
                "taken_on": TAKEN_ON,
            },
        )


def remove_prices(apps, schema_editor):
    ModelPrice = apps.get_model("core", "ModelPrice")
    ModelPrice.objects.filter(valid_from=TAKEN_ON, taken_on=TAKEN_ON, model__in=[p[1] for p in PRICES]).delete()


class Migration(migrations.Migration):
    dependencies = [("core", "0009_modelprice")]

    operations = [migrations.RunPython(add_prices, remove_prices)]
