"""For the data migrations that give an app's rows a project: everything from before projects
belongs to `default`.

On a table of millions of rows the migration pair is: add the column nullable (instant on
PostgreSQL: no rewrite), fill it in one UPDATE (this function), then, in the next migration (so
that PostgreSQL has no pending trigger events), make it NOT NULL."""


def fill_with_default_project(app_label: str, *model_names: str):
    """A RunPython function that sets `project` to `default` on every row of the models named."""

    def forwards(apps, schema_editor):
        Project = apps.get_model("core", "Project")
        default, _ = Project.objects.get_or_create(slug="default", defaults={"name": "Default"})
        for name in model_names:
            apps.get_model(app_label, name).objects.filter(project__isnull=True).update(project=default)

    return forwards
