from django.conf import settings
from rest_framework.permissions import BasePermission


class ApiAccess(BasePermission):
    """Default for every endpoint: an authenticated user, or anyone when the deployment has said
    explicitly (EVALSITE_ALLOW_ANONYMOUS) that it runs on a trusted network."""

    def has_permission(self, request, view):
        if request.user and request.user.is_authenticated:
            return True
        return settings.EVALSITE_ALLOW_ANONYMOUS


class IsStaff(BasePermission):
    """Destructive endpoints: always a staff user, whatever EVALSITE_ALLOW_ANONYMOUS says."""

    message = "This action needs a staff account."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class StaffForUnsafeMethods(BasePermission):
    """Reads follow ApiAccess; writes need staff (editing shared configuration)."""

    message = "Changing this needs a staff account."

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return ApiAccess().has_permission(request, view)
        return IsStaff().has_permission(request, view)
