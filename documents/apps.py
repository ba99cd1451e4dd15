from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DocumentsConfig(AppConfig):
    """Registers the app's system checks (``documents.checks``: the MuPDF minimum), the
    seals' check with the ledger's verifier, and the sealing of older revisions after
    ``migrate``."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        from audit.ledger import ledger_content_check_register
        from documents import checks  # noqa: F401  registers them
        from documents.seals import revisions_sealed_after_migrate, seals_verify

        ledger_content_check_register(seals_verify)
        post_migrate.connect(revisions_sealed_after_migrate, sender=self)
