import json

from django.contrib.auth import views as auth_views
from django.contrib.auth.models import Group, User
from django.http import JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def put_user(request):
    """The tests' way to set a provider user (created or changed): username, password, email and
    groups. Loopback-only test server: no authentication."""
    data = json.loads(request.body)
    user, _ = User.objects.get_or_create(username=data["username"])
    user.set_password(data["password"])
    user.email = data.get("email", "")
    user.first_name = data.get("given_name", "")
    user.save()
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in data.get("groups", [])])
    return JsonResponse({"id": user.pk})


urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view()),
    path("testing/users", put_user),
    path("openid/", include("oidc_provider.urls", namespace="oidc_provider")),
]
