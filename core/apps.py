"""The kernel's app: wires what must run at start-up and after ``migrate``."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Registers the OpenAPI description of API-key authentication and creates the
    rate limits' cache table after ``migrate``."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from core import schema  # noqa: F401  registers the OpenAPI auth schemes
        from core.throttling import cache_table_ensure

        # the rate limits' counters live in a database table when no Redis is configured
        post_migrate.connect(cache_table_ensure, sender=self)
