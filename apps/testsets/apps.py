from django.apps import AppConfig


class TestsetsConfig(AppConfig):
    name = "apps.testsets"
    label = "testsets"
    verbose_name = "Test sets and question sets"

    def ready(self):
        # Test set versions are recorded as they are published (apps.core.versioning); deletes here,
        # and every change to a V1 question set's own row.
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("TestSet"), object_type="test_set", on=("delete",))
        audit_register(self.get_model("Dataset"), object_type="question_set")
