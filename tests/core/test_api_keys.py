"""core/api_keys.py: keys are made with a role no higher than their maker's, are
stored only as a hash, and a revoked key stops working at once."""

from __future__ import annotations

import pytest

from core.api_keys import (
    ApiKeyRejected,
    api_key_create,
    api_key_get,
    api_key_revoke,
    api_key_verify,
    api_keys_of,
)
from core.roles import Role, role_may_grant
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", Role.values)
def test_an_admin_may_give_any_role(role: str) -> None:
    assert role_may_grant(Role.ADMIN, role)


@pytest.mark.parametrize("granter", [Role.VIEWER, Role.EDITOR, Role.OFFICER, None, "root"])
@pytest.mark.parametrize("role", Role.values)
def test_no_other_role_may_give_one(granter: str | None, role: str) -> None:
    """Only admins manage keys today; were another role to, it could still give no
    role that allows more than itself."""
    assert not role_may_grant(granter, role)


def test_a_key_cannot_be_made_above_its_makers_role() -> None:
    org = factories.organization()
    with pytest.raises(ApiKeyRejected) as refused:
        api_key_create(organization=org, role=Role.ADMIN, granted_by=Role.EDITOR)
    assert (refused.value.code, refused.value.status, refused.value.param) == (
        "role_above_own",
        403,
        "role",
    )
    with pytest.raises(ApiKeyRejected, match="unknown role 'root'"):
        api_key_create(organization=org, role="root")
    assert not api_keys_of(organization=org).exists()
    key, _ = api_key_create(organization=org, role=Role.ADMIN, granted_by=Role.ADMIN)
    assert key.role == Role.ADMIN


def test_a_revoked_key_no_longer_verifies_and_is_revoked_once() -> None:
    org = factories.organization()
    key, secret = api_key_create(organization=org, role=Role.VIEWER, name="robot")
    assert secret not in key.key_hash and api_key_verify(presented=secret) == key
    revoked = api_key_revoke(key=key)
    assert revoked.revoked_at is not None
    assert api_key_verify(presented=secret) is None
    with pytest.raises(ApiKeyRejected) as again:
        api_key_revoke(key=key)
    assert (again.value.code, again.value.status) == ("already_revoked", 409)


def test_a_key_is_found_only_in_its_own_organization() -> None:
    acme, globex = factories.organization("Acme"), factories.organization("Globex")
    key, _ = api_key_create(organization=acme)
    assert api_key_get(organization=acme, key_id=str(key.pk)) == key
    for organization, key_id in ((globex, str(key.pk)), (acme, "-1"), (acme, "1e3")):
        with pytest.raises(ApiKeyRejected) as missing:
            api_key_get(organization=organization, key_id=key_id)
        assert missing.value.status == 404
