from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    """Registers the app's system checks (``documents.checks``: the MuPDF minimum)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        from documents import checks  # noqa: F401  registers them
