import uuid

from django import forms
from pydantic import ValidationError

from apps.agentic.judges import AGENTIC_METRICS
from apps.bots.models import Bot
from apps.core.errors import DomainError
from apps.rubrics.models import Rubric
from apps.testsets.models import Dataset, TestSet

from . import services
from .alignment.metrics import metric_trial_create
from .alignment.services import trial_create
from .judging.aggregate import SCOPES
from .models import LABEL_MAX_LENGTH
from .schemas import MAX_PROMPT_TEMPLATE, AlignmentTrialIn, MetricTrialIn, RunCreateIn


class OwnedSelect(forms.Select):
    """A select whose options say which bot they belong to (data-bot), for the launch page's script."""

    def __init__(self, *args, owners: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.owners = owners

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex=subindex, attrs=attrs)
        if str(value) in self.owners:
            option["attrs"]["data-bot"] = self.owners[str(value)]
        return option


def _by_bot(rows, label) -> list:
    """Choices grouped under their bot's name (what a browser without the script shows)."""
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(f"{row.bot.name} ({row.bot.agent_id})", []).append((str(row.pk), label(row)))
    return list(groups.items())


class RunLaunchForm(forms.Form):
    """The form that launches a run through the run service, shared by the console and the admin:
    bots, test sets and rubrics are picked by name, never typed as ids. The admin's form adds the
    settings only it offers (versions, question sets, the judge)."""

    agent_id = forms.ChoiceField(label="Bot")
    # Ids reach the service as UUIDs, as the API passes them.
    test_set_id = forms.TypedChoiceField(label="Test set", coerce=uuid.UUID, empty_value=None)
    rubric_id = forms.TypedChoiceField(label="Rubric", required=False, coerce=uuid.UUID, empty_value=None)
    label = forms.CharField(
        max_length=LABEL_MAX_LENGTH,
        required=False,
        widget=forms.TextInput(attrs={"size": 50}),
        help_text="Optional: what to call this run, e.g. “after removing the PTO doc”.",
    )
    concurrency = forms.IntegerField(min_value=1, max_value=services.MAX_CONCURRENCY, initial=3)
    repeats = forms.IntegerField(
        label="Repeats",
        min_value=1,
        max_value=services.MAX_REPEATS,
        initial=1,
        required=False,
        help_text="How many times every item runs (each run an attempt), to see which "
        "verdicts are flaky; an item passes only if every attempt passes. "
        "Blank: 1.",
    )
    component_scope_filter = forms.ChoiceField(
        label="Component scope", required=False, choices=[("", "all scopes")] + [(s, s) for s in SCOPES]
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the project's bots, test sets and rubrics are offered, and the run is launched in it.
        self.project = project
        self.fields["agent_id"].choices = [
            (b.agent_id, f"{b.name} ({b.adapter})") for b in Bot.objects.of_project(project).order_by("name")
        ]
        test_sets = list(TestSet.objects.filter(project=project).of_bot().order_by("bot__name", "name"))
        rubrics = list(Rubric.objects.filter(project=project).of_bot().order_by("bot__name", "name"))
        # Which bot each test set and rubric belongs to: the form refuses another bot's (clean), and
        # the page's script (static/console/launch.js) shows only the chosen bot's options.
        self.owners = {
            "test_set_id": {str(t.pk): t.bot for t in test_sets},
            "rubric_id": {str(r.pk): r.bot for r in rubrics},
        }
        self.fields["test_set_id"].choices = [("", "—")] * (not self.fields["test_set_id"].required) + _by_bot(
            test_sets, lambda t: f"{t.name} (v{t.current_version})"
        )
        self.fields["rubric_id"].choices = [("", "no rubric")] + _by_bot(
            rubrics, lambda r: f"{r.name} (v{r.current_version})"
        )
        for name, owners in self.owners.items():
            self.fields[name].widget = OwnedSelect(owners={pk: bot.agent_id for pk, bot in owners.items()})
            self.fields[name].widget.choices = self.fields[name].choices

    def clean(self):
        """A test set or rubric of another bot is refused: its items and rules were written for that
        bot's tools and knowledge, so the run's verdicts would say nothing about this one."""
        cleaned = super().clean()
        agent_id = cleaned.get("agent_id")
        for name, what in (("test_set_id", "test set"), ("rubric_id", "rubric")):
            chosen = cleaned.get(name)
            owner = self.owners[name].get(str(chosen)) if chosen else None
            if agent_id and owner is not None and owner.agent_id != agent_id:
                self.add_error(
                    name,
                    f"This {what} belongs to the bot “{owner.name}”, not to the bot chosen "
                    f"above: choose one of that bot's {what}s, or the bot “{owner.name}”.",
                )
        return cleaned

    def launch(self, *, user):
        """The new run, or None with the service's refusal added to the form's errors."""
        data = {name: (value if value != "" else None) for name, value in self.cleaned_data.items()}
        try:
            # Blank fields (None) take the service's defaults; a refusal, of the input or of the
            # service, is shown as the form's error.
            return services.run_create(data=RunCreateIn.of(**data), project=self.project, created_by=user)
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
            return None


class AdminRunLaunchForm(RunLaunchForm):
    """The admin's launch form: the console's, plus pinned versions, a V1 question set instead of a
    test set, and the judge."""

    test_set_id = forms.TypedChoiceField(
        label="Test set", required=False, coerce=uuid.UUID, empty_value=None, help_text="Or a question set below."
    )
    test_set_version = forms.IntegerField(required=False, min_value=1, help_text="blank: latest")
    dataset_id = forms.TypedChoiceField(
        label="Question set", required=False, coerce=uuid.UUID, empty_value=None, help_text="V1, instead of a test set"
    )
    rubric_version = forms.IntegerField(required=False, min_value=1, help_text="blank: latest")
    judge_model = forms.CharField(required=False, help_text='blank: the configured judge; "heuristic" forces it')

    field_order = [
        "agent_id",
        "test_set_id",
        "test_set_version",
        "dataset_id",
        "rubric_id",
        "rubric_version",
        "label",
        "concurrency",
        "repeats",
        "component_scope_filter",
        "judge_model",
    ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset_id"].choices = [("", "—")] + [
            (str(d.pk), d.name) for d in Dataset.objects.filter(project=self.project).order_by("name")
        ]


CANDIDATE_KINDS = [
    ("rubric_version", "another version of the rule's text"),
    ("judge_model", "another judge model"),
    ("prompt_template", "other instructions for the LLM judge"),
]


def _prompt_template_field(help_text: str) -> forms.CharField:
    return forms.CharField(
        required=False, max_length=MAX_PROMPT_TEMPLATE, widget=forms.Textarea(attrs={"rows": 4}), help_text=help_text
    )


class _TrialForm(forms.Form):
    """What the rubric page's and the agent page's "Try a candidate" share: the candidate's model
    field, and turning the input or the service's refusal into the form's errors."""

    judge_model = forms.CharField(required=False, max_length=200, help_text='"heuristic" or an allowed LLM model')

    def candidate(self) -> dict:
        kind = self.cleaned_data["kind"]
        return {kind: self.cleaned_data.get(kind)}

    def _started(self, start):
        """start()'s trial, or None with the refusal on the form."""
        try:
            return start()
        except ValidationError as exc:
            self.add_error(None, "; ".join(e["msg"] for e in exc.errors()))
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
        return None

    def refusals(self) -> list[str]:
        """Every error once: form.errors holds the non-field ones too (under __all__)."""
        return [error for errors in self.errors.values() for error in errors]


class AlignmentTrialForm(_TrialForm):
    """The rubric page's "Try a candidate": a rule, and one change to how it is judged."""

    rule = forms.ChoiceField()
    kind = forms.ChoiceField(choices=CANDIDATE_KINDS, widget=forms.RadioSelect, initial="rubric_version")
    rubric_version = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    prompt_template = _prompt_template_field(
        "Read by the LLM judge before the rule, the bot context and the conversation (always appended)."
    )

    def __init__(self, *args, rubric, rules: list[dict], **kwargs):
        super().__init__(*args, **kwargs)
        self.rubric = rubric
        self.fields["rule"].choices = [(r["id"], f"{r['id']}: {r['name']}") for r in rules]
        versions = rubric.versions.order_by("-version").values_list("version", flat=True)
        self.fields["rubric_version"].choices = [(v, f"version {v}") for v in versions]

    def start(self, *, user):
        """The new trial, or None with the refusal (of the input or of the service) on the form."""
        return self._started(
            lambda: trial_create(
                rubric=self.rubric,
                data=AlignmentTrialIn.model_validate(
                    {"rule": self.cleaned_data["rule"], "candidate": self.candidate()}
                ),
                created_by=user,
            )
        )


class MetricTrialForm(_TrialForm):
    """The agent agreement page's "Try a candidate": a metric (of the page's agent, or of every
    agent's evaluations), and a judge model or instructions to grade it with."""

    metric = forms.ChoiceField(choices=[(name, name.replace("_", " ")) for name in AGENTIC_METRICS])
    agent_name = forms.CharField(required=False, max_length=255, widget=forms.HiddenInput)
    kind = forms.ChoiceField(choices=CANDIDATE_KINDS[1:], widget=forms.RadioSelect, initial="judge_model")
    prompt_template = _prompt_template_field(
        "Read by the LLM judge in place of the metric's rubric; the session (always appended) stays data."
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project

    def start(self, *, user):
        """The new trial, or None with the refusal (of the input or of the service) on the form."""
        body = {
            "metric": self.cleaned_data["metric"],
            "agent_name": self.cleaned_data["agent_name"] or None,
            "candidate": self.candidate(),
        }
        return self._started(
            lambda: metric_trial_create(project=self.project, data=MetricTrialIn.model_validate(body), created_by=user)
        )
