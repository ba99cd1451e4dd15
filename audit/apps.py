from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from audit.roles import compliance_officer_group_ensure

        # after permissions exist (auth's own post_migrate handler runs first)
        post_migrate.connect(compliance_officer_group_ensure, sender=self)
