import uuid

from django import forms

from apps.bots.models import Bot
from apps.core.errors import DomainError
from apps.rubrics.models import Rubric
from apps.testsets.models import Dataset, TestSet

from . import services
from .judging.aggregate import SCOPES
from .models import LABEL_MAX_LENGTH


class RunLaunchForm(forms.Form):
    """The form that launches a run through the run service, shared by the console and the admin:
    bots, test sets and rubrics are picked by name, never typed as ids. The admin's form adds the
    settings only it offers (versions, question sets, the judge)."""

    agent_id = forms.ChoiceField(label="Bot")
    # Ids reach the service as UUIDs, as the API passes them.
    test_set_id = forms.TypedChoiceField(label="Test set", coerce=uuid.UUID, empty_value=None)
    rubric_id = forms.TypedChoiceField(label="Rubric", required=False, coerce=uuid.UUID, empty_value=None)
    label = forms.CharField(max_length=LABEL_MAX_LENGTH, required=False, widget=forms.TextInput(attrs={"size": 50}),
                            help_text="Optional: what to call this run, e.g. “after removing the PTO doc”.")
    concurrency = forms.IntegerField(min_value=1, max_value=services.MAX_CONCURRENCY, initial=3)
    repeats = forms.IntegerField(label="Repeats", min_value=1, max_value=services.MAX_REPEATS, initial=1,
                                 required=False,
                                 help_text="How many times every item runs (each run an attempt), to see which "
                                           "verdicts are flaky; an item passes only if every attempt passes. "
                                           "Blank: 1.")
    component_scope_filter = forms.ChoiceField(label="Component scope", required=False,
                                               choices=[("", "all scopes")] + [(s, s) for s in SCOPES])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent_id"].choices = [(b.agent_id, f"{b.name} ({b.adapter})")
                                           for b in Bot.objects.order_by("name")]
        self.fields["test_set_id"].choices = [("", "—")] * (not self.fields["test_set_id"].required) + [
            (str(t.pk), f"{t.name} (v{t.current_version})") for t in TestSet.objects.order_by("name")]
        self.fields["rubric_id"].choices = [("", "no rubric")] + [
            (str(r.pk), f"{r.name} (v{r.current_version})") for r in Rubric.objects.order_by("name")]

    def launch(self, *, user):
        """The new run, or None with the service's refusal added to the form's errors."""
        data = {name: (value if value != "" else None) for name, value in self.cleaned_data.items()}
        if data.get("repeats") is None:  # left blank: one attempt, the service's default
            data.pop("repeats", None)
        try:
            return services.run_create(created_by=user, **data)
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
            return None


class AdminRunLaunchForm(RunLaunchForm):
    """The admin's launch form: the console's, plus pinned versions, a V1 question set instead of a
    test set, and the judge."""

    test_set_id = forms.TypedChoiceField(label="Test set", required=False, coerce=uuid.UUID, empty_value=None,
                                         help_text="Or a question set below.")
    test_set_version = forms.IntegerField(required=False, min_value=1, help_text="blank: latest")
    dataset_id = forms.TypedChoiceField(label="Question set", required=False, coerce=uuid.UUID, empty_value=None,
                                        help_text="V1, instead of a test set")
    rubric_version = forms.IntegerField(required=False, min_value=1, help_text="blank: latest")
    judge_model = forms.CharField(required=False, help_text='blank: the configured judge; "heuristic" forces it')

    field_order = ["agent_id", "test_set_id", "test_set_version", "dataset_id", "rubric_id", "rubric_version",
                   "label", "concurrency", "repeats", "component_scope_filter", "judge_model"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset_id"].choices = [("", "—")] + [
            (str(d.pk), d.name) for d in Dataset.objects.order_by("name")]
