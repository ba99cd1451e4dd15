"""The "Compliance officer" role: may view every record of its organization,
change nothing. Kept in step with the models after every migrate (and flush)."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

OFFICER_GROUP = "Compliance officer"
VIEWABLE_APPS = ("documents", "retrieval", "citations", "audit")


def compliance_officer_group_ensure(**_: object) -> Group:
    group, _ = Group.objects.get_or_create(name=OFFICER_GROUP)
    views = Permission.objects.filter(
        content_type__app_label__in=VIEWABLE_APPS, codename__startswith="view_"
    )
    group.permissions.set(views)
    return group
