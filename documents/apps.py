from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        from documents.api import schema  # noqa: F401  registers the OpenAPI auth schemes
