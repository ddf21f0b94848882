from django.db import models

from apps.core.pricing import CURRENCY, Price

PRICE_MAX_DIGITS, PRICE_PLACES = 12, 6


class ModelPrice(models.Model):
    """One model's price per million tokens from valid_from on (apps.core.pricing). A price change
    is a new row with a later valid_from, so calls made before it keep the price they were made at."""

    model = models.CharField(max_length=200, help_text="the model id as the provider names it, e.g. gpt-4o")
    valid_from = models.DateField(help_text="the first day this price applies (UTC)")
    input_per_mtok = models.DecimalField(
        "input, USD per 1M tokens", max_digits=PRICE_MAX_DIGITS, decimal_places=PRICE_PLACES
    )
    output_per_mtok = models.DecimalField(
        "output, USD per 1M tokens", max_digits=PRICE_MAX_DIGITS, decimal_places=PRICE_PLACES
    )
    cached_input_per_mtok = models.DecimalField(
        "cached input, USD per 1M tokens",
        null=True,
        blank=True,
        help_text="empty: cached input tokens cost the input price",
        max_digits=PRICE_MAX_DIGITS,
        decimal_places=PRICE_PLACES,
    )
    currency = models.CharField(max_length=3, default=CURRENCY, editable=False)
    # Where the figure came from and when it was read, so a reviewer knows how old a shipped price is.
    source = models.CharField(max_length=300, blank=True, default="")
    taken_on = models.DateField(null=True, blank=True, help_text="when the price was read from the source")

    class Meta:
        app_label = "core"
        ordering = ["model", "-valid_from"]
        constraints = [models.UniqueConstraint(fields=["model", "valid_from"], name="model_price_unique_from")]

    def __str__(self):
        return f"{self.model} from {self.valid_from}"

    def as_price(self) -> Price:
        return Price(
            model=self.model,
            valid_from=self.valid_from,
            input_per_mtok=self.input_per_mtok,
            output_per_mtok=self.output_per_mtok,
            cached_input_per_mtok=self.cached_input_per_mtok,
        )
