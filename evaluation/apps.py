from django.apps import AppConfig
from django.db.models.signals import post_migrate


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from audit.roles import compliance_officer_group_ensure

        # again once this app's permissions exist (it comes after audit in INSTALLED_APPS)
        post_migrate.connect(
            compliance_officer_group_ensure, sender=self, dispatch_uid="evaluation_officers"
        )
