"""The console's "Add to test set" form: traces or run results become items of a new test-set
version, each with the expected outcome and success criteria the reviewer writes for it. What each
source is, and how it becomes an item, is the caller's (testsets.services for traces, runs.services
for results, a layer above this app)."""

from collections.abc import Callable
from dataclasses import dataclass, field

from django import forms
from pydantic import ValidationError

from apps.core.errors import DomainError

from .models import TestSet


@dataclass
class Source:
    """One trace or result on the form: what it is, what was asked and answered, and the expected
    outcome and criteria the form starts with."""

    key: str
    kind: str  # "trace" or "run result"
    url: str
    title: str
    detail: str
    question: str
    answer: str | None
    expected_outcome: str = ""
    success_criteria: list[str] = field(default_factory=list)


# publish(test_set, [(source key, expected outcome, criteria)], changelog, author) -> the test set
Publish = Callable[[TestSet, list[tuple[str, str, list[str]]], str, str], TestSet]


class FromSourcesForm(forms.Form):
    test_set = forms.ModelChoiceField(queryset=TestSet.objects.none(), empty_label=None, label="Test set")
    changelog = forms.CharField(required=False, max_length=2000, label="Changelog", help_text="Optional.")

    def __init__(self, data=None, *, project, sources: list[Source], initial_test_set=None):
        super().__init__(data, initial={"test_set": initial_test_set})
        choice = self.fields["test_set"]
        choice.queryset = TestSet.objects.filter(project=project).select_related("bot").order_by("name")
        choice.label_from_instance = lambda t: f"{t.name} — {t.bot.name} (version {t.current_version})"
        self.sources = sources
        for index, source in enumerate(sources):
            self.fields[f"expected_outcome_{index}"] = forms.CharField(
                required=False,
                initial=source.expected_outcome,
                label=f"Expected outcome for {source.kind} {source.key}",
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            )
            self.fields[f"success_criteria_{index}"] = forms.CharField(
                required=False,
                initial="\n".join(source.success_criteria),
                label=f"Success criteria for {source.kind} {source.key}",
                help_text="One per line.",
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            )

    def rows(self):
        """Each source with its two fields, for the template."""
        return [
            (source, self[f"expected_outcome_{i}"], self[f"success_criteria_{i}"])
            for i, source in enumerate(self.sources)
        ]

    def publish(self, publish: Publish, *, author: str) -> TestSet | None:
        """The new version, or None with the reason among the form's errors (nothing published)."""
        if not self.is_valid():
            return None
        requests = [
            (
                source.key,
                self.cleaned_data[f"expected_outcome_{i}"],
                [line.strip() for line in self.cleaned_data[f"success_criteria_{i}"].splitlines() if line.strip()],
            )
            for i, source in enumerate(self.sources)
        ]
        try:
            return publish(self.cleaned_data["test_set"], requests, self.cleaned_data["changelog"], author)
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
        except ValidationError as exc:
            for error in exc.errors():
                self.add_error(None, f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}")
        return None
