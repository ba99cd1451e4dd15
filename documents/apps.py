from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DocumentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        from audit.ledger import ledger_content_check_register
        from documents.seals import revisions_sealed_after_migrate, seals_verify

        ledger_content_check_register(seals_verify)
        post_migrate.connect(revisions_sealed_after_migrate, sender=self)
