from django import forms

from apps.core.errors import DomainError

from . import services


class RunLaunchForm(forms.Form):
    """A form that launches a run through the run service (admin and console forms share this)."""

    def launch(self, *, user):
        """The new run, or None with the service's refusal added to the form's errors."""
        data = {name: (value if value != "" else None) for name, value in self.cleaned_data.items()}
        try:
            return services.run_create(created_by=user, **data)
        except DomainError as exc:
            self.add_error(None, str(exc.detail))
            return None
