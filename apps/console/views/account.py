"""The console's login and logout. The admin's login refuses users who are not staff, yet every
active user may read the console (apps.core.auth.permissions gives them the read scope), so the console
has its own; staff land on the same pages and may also launch and review."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_POST

from apps.core.projects.resolution import session_project_select

from ..context import console_context
from .common import found_or_404


class ConsoleLoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True
    next_page = reverse_lazy("console:dashboard")

    def get_context_data(self, **kwargs):
        return {**console_context(self.request, title="Log in"), **super().get_context_data(**kwargs)}


login = ConsoleLoginView.as_view()
logout = auth_views.LogoutView.as_view(next_page=reverse_lazy("console:login"))


def locked_out(request, original_response=None, credentials=None):
    """django-axes' answer to a refused login (AXES_LOCKOUT_CALLABLE), at the console's door and the
    admin's: a 429 page in the console's layout that says why and for how long. Retry-After is the
    whole cool-off, the longest the wait can be."""
    minutes = settings.EVALSITE_LOGIN_COOLOFF_MINUTES
    response = render(
        request,
        "console/lockout.html",
        console_context(
            request, title="Login refused", failure_limit=settings.EVALSITE_LOGIN_FAILURE_LIMIT, cooloff_minutes=minutes
        ),
        status=429,
    )
    response["Retry-After"] = str(minutes * 60)
    return response


@login_required
@require_POST
def project_switch(request):
    """The header's project switcher: the session acts in the chosen project from now on
    (apps.core.projects.resolution.session_project_select). A project the person may not see is
    the 404 page, as one that does not exist. Back to the dashboard: the page they were on may be
    an object of the project they left, which is a 404 in the new one."""
    project = found_or_404(session_project_select, request, slug=request.POST.get("project", ""))
    messages.success(request, f"Now working in {project.name}.")
    return redirect("console:dashboard")
