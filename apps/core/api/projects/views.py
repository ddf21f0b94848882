"""/api/v1/projects: a team's projects, their settings and members.

A key sees and manages only its own project (another project's slug answers 404, as an unknown
one); a person sees their projects. Creating a project is a superuser's; changing a project's
settings or members is its admins' (a key of the project holding `admin`, which only an admin's
key may hold, or a person with the admin role)."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.openapi import CONFLICT
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.errors import ForbiddenError
from apps.core.projects import selectors, services
from apps.core.projects.resolution import is_project_admin, is_superuser, projects_visible
from apps.core.projects.schemas import ProjectChanges, ProjectNew

from .schemas import MemberIn, MemberListOut, MemberOut, ProjectListOut, ProjectOut

TAG = ["projects"]


def _visible_project(request, slug):
    return selectors.project_get(projects=projects_visible(request), slug=slug)


def _admin_project(request, slug):
    project = _visible_project(request, slug)
    if not is_project_admin(request, project):
        raise ForbiddenError(f"Only an admin of project {slug} may change it")
    return project


class ProjectListView(APIView):
    required_scopes = {"GET": "read", "POST": "admin"}

    @extend_schema(tags=TAG, responses={200: ProjectListOut}, operation_id="projects_list", summary="List projects")
    def get(self, request):
        return respond(ProjectListOut, list(projects_visible(request)))

    @extend_schema(
        tags=TAG,
        request=ProjectNew,
        responses={201: ProjectOut, 409: CONFLICT},
        operation_id="projects_create",
        summary="Create a project (superusers)",
        description="slug: lowercase letters, digits and hyphens. Add members with POST …/members.",
    )
    def post(self, request):
        if not is_superuser(request):
            raise ForbiddenError("Only a superuser may create projects")
        project = services.project_create(data=validate_body(ProjectNew, request.data))
        return respond(ProjectOut, project, status=status.HTTP_201_CREATED)


class ProjectDetailView(APIView):
    required_scopes = {"GET": "read", "PATCH": "admin"}

    @extend_schema(tags=TAG, responses={200: ProjectOut}, operation_id="projects_get", summary="Get a project")
    def get(self, request, slug):
        return respond(ProjectOut, _visible_project(request, slug))

    @extend_schema(
        tags=TAG,
        request=ProjectChanges,
        responses={200: ProjectOut},
        operation_id="projects_update",
        summary="Change a project's settings (project admins)",
        description="Only the fields sent change: name, retention_days and run_retention_days (days, "
        "null keeps forever), redaction ({enabled, detectors, custom_patterns}, replaced whole).",
    )
    def patch(self, request, slug):
        project = _admin_project(request, slug)
        changes = validate_body(ProjectChanges, request.data)
        return respond(ProjectOut, services.project_update(project=project, changes=changes))


class ProjectMemberListView(APIView):
    required_scopes = {"GET": "read", "POST": "admin"}

    @extend_schema(
        tags=TAG,
        responses={200: MemberListOut},
        operation_id="projects_members_list",
        summary="List a project's members",
    )
    def get(self, request, slug):
        project = _visible_project(request, slug)
        return respond(MemberListOut, list(selectors.members_of(project=project)))

    @extend_schema(
        tags=TAG,
        request=MemberIn,
        responses={200: MemberOut, 201: MemberOut},
        operation_id="projects_members_set",
        summary="Add a member or change their role (project admins)",
        description="201 when the user joins, 200 when their role changes. The user must exist.",
    )
    def post(self, request, slug):
        project = _admin_project(request, slug)
        body = validate_body(MemberIn, request.data)
        _membership, created = services.membership_set(project=project, username=body.username, role=body.role)
        return respond(
            MemberOut,
            selectors.member_get(project=project, username=body.username),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class ProjectMemberDetailView(APIView):
    required_scopes = {"DELETE": "admin"}

    @extend_schema(
        tags=TAG,
        responses={204: None},
        operation_id="projects_members_remove",
        summary="Remove a member (project admins)",
        description="Their keys of this project stop working at once.",
    )
    def delete(self, request, slug, username):
        project = _admin_project(request, slug)
        services.membership_remove(project=project, username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)
