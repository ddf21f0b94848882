"""The console's "Add to test set" form: production traces become items of a new test-set version
(services.testset_items_from_traces), each with the expected outcome and success criteria the
reviewer writes for it."""

from django import forms
from pydantic import ValidationError

from apps.core.errors import DomainError

from . import services
from .models import TestSet
from .schemas import FromTraceIn


class FromTracesForm(forms.Form):
    test_set = forms.ModelChoiceField(queryset=TestSet.objects.none(), empty_label=None, label="Test set")
    changelog = forms.CharField(
        required=False, max_length=2000, label="Changelog", help_text="Default: “Added N items from traces”."
    )

    def __init__(self, data=None, *, project, traces, initial_test_set=None):
        super().__init__(data, initial={"test_set": initial_test_set})
        field = self.fields["test_set"]
        field.queryset = TestSet.objects.filter(project=project).select_related("bot").order_by("name")
        field.label_from_instance = lambda t: f"{t.name} — {t.bot.name} (version {t.current_version})"
        self.traces = list(traces)
        for index, trace in enumerate(self.traces):
            self.fields[f"expected_outcome_{index}"] = forms.CharField(
                required=False,
                label=f"Expected outcome for {trace.session_id}",
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            )
            self.fields[f"success_criteria_{index}"] = forms.CharField(
                required=False,
                label=f"Success criteria for {trace.session_id}",
                help_text="One per line.",
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            )

    def rows(self):
        """Each trace with its two fields, for the template."""
        return [
            (trace, self[f"expected_outcome_{i}"], self[f"success_criteria_{i}"]) for i, trace in enumerate(self.traces)
        ]

    def publish(self, *, author: str) -> TestSet | None:
        """The new version, or None with the reason among the form's errors (nothing published)."""
        if not self.is_valid():
            return None
        try:
            requests = [
                FromTraceIn(
                    session_id=trace.session_id,
                    expected_outcome=self.cleaned_data[f"expected_outcome_{i}"],
                    success_criteria=[
                        line.strip() for line in self.cleaned_data[f"success_criteria_{i}"].splitlines() if line.strip()
                    ],
                )
                for i, trace in enumerate(self.traces)
            ]
            return services.testset_items_from_traces(
                test_set=self.cleaned_data["test_set"],
                requests=requests,
                changelog=self.cleaned_data["changelog"],
                author=author,
            )
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
        except ValidationError as exc:
            for error in exc.errors():
                self.add_error(None, f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}")
        return None
