from django.apps import AppConfig


class RagConfig(AppConfig):
    name = "apps.rag"
    label = "rag"
    verbose_name = "TRACE RAG evaluations"
