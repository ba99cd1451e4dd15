from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from documents.api import schema  # noqa: F401  registers the OpenAPI auth schemes
        from documents.throttling import cache_table_ensure

        # the rate limits' counters live in a database table when no Redis is configured
        post_migrate.connect(cache_table_ensure, sender=self)
