"""The console's login and logout. The admin's login refuses users who are not staff, yet every
active user may read the console (apps.core.permissions gives them the read scope), so the console
has its own; staff land on the same pages and may also launch and review."""

from django.contrib.auth import views as auth_views
from django.urls import reverse_lazy

from ..context import console_context


class ConsoleLoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True
    next_page = reverse_lazy("console:dashboard")

    def get_context_data(self, **kwargs):
        return {**console_context(self.request, title="Log in"), **super().get_context_data(**kwargs)}


login = ConsoleLoginView.as_view()
logout = auth_views.LogoutView.as_view(next_page=reverse_lazy("console:login"))
