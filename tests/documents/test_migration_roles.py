"""Migration ``documents 0014``: roles for the members and keys made before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("documents", "0013_chunk_context")]
AFTER = [("documents", "0014_roles")]


@pytest.mark.django_db(transaction=True)
def test_members_and_keys_of_before_keep_what_they_could_do() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    organization = apps.get_model("documents", "Organization").objects.create(name="Acme")
    users, groups = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    officers = groups.objects.create(name="Compliance officer")
    member_model = apps.get_model("documents", "OrganizationMember")
    alice = users.objects.create(username="alice")
    olivia = users.objects.create(username="olivia", is_staff=True)
    olivia.groups.add(officers)
    grouped_not_staff = users.objects.create(username="nina")
    grouped_not_staff.groups.add(officers)
    for user in (alice, olivia, grouped_not_staff):
        member_model.objects.create(organization=organization, user=user)
    apps.get_model("documents", "ApiKey").objects.create(
        organization=organization, prefix="abc123", key_hash="0" * 64
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    roles = dict(
        apps.get_model("documents", "OrganizationMember").objects.values_list(
            "user__username", "role"
        )
    )
    assert roles == {"alice": "editor", "olivia": "officer", "nina": "editor"}
    assert list(apps.get_model("documents", "ApiKey").objects.values_list("role", flat=True)) == [
        "editor"
    ]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())  # the rest of the suite's schema
