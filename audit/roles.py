"""The "Compliance officer" role: may view every record of its organization,
change nothing. Kept in step with the models after every migrate (and flush)."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

OFFICER_GROUP = "Compliance officer"
VIEWABLE_APPS = ("documents", "retrieval", "citations", "audit", "evaluation")
# the one action officers take: measuring their apps (evaluation/admin.py)
OFFICER_ACTIONS = ("evaluation.start_evaluation",)


def compliance_officer_group_ensure(**_: object) -> Group:
    group, _created = Group.objects.get_or_create(name=OFFICER_GROUP)
    views = Permission.objects.filter(
        content_type__app_label__in=VIEWABLE_APPS, codename__startswith="view_"
    )
    actions = Permission.objects.filter(
        content_type__app_label__in=[a.split(".")[0] for a in OFFICER_ACTIONS],
        codename__in=[a.split(".")[1] for a in OFFICER_ACTIONS],
    )
    group.permissions.set([*views, *actions])
    return group
