"""Members and roles: ``member_set``, the admin access that follows a role, the
organization's admin page and ``manage.py add_member``."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from core.members import MemberRejected, member_remove, member_set
from core.role_backend import organizations_granting
from documents.models import Organization, OrganizationMember
from tests import factories

pytestmark = pytest.mark.django_db


def _user(name: str) -> User:
    return get_user_model().objects.create_user(name, password="pw-123-456-xyz")


def _fresh(user: User) -> User:
    """The user as a new request loads it (role permissions are cached per object)."""
    return get_user_model().objects.get(pk=user.pk)


def test_a_role_that_works_in_the_admin_makes_the_member_staff_and_losing_it_undoes_it() -> None:
    acme = factories.organization("Acme")
    olivia = _user("olivia")
    member_set(organization=acme, user=olivia, role="officer")
    olivia = _fresh(olivia)
    assert olivia.is_staff
    assert olivia.has_perm("citations.view_queryexecution")
    assert not olivia.has_perm("citations.change_queryexecution")
    assert not olivia.has_perm("documents.add_organizationmember")

    member_set(organization=acme, user=olivia, role="viewer")
    olivia = _fresh(olivia)
    assert not olivia.is_staff
    assert not olivia.has_perm("citations.view_queryexecution")
    assert OrganizationMember.objects.get(user=olivia).role == "viewer"  # changed, not added


def test_removing_the_last_admin_role_takes_the_admin_away_but_keeps_a_superuser() -> None:
    acme = factories.organization("Acme")
    adam = _user("adam")
    member = member_set(organization=acme, user=adam, role="admin")
    assert _fresh(adam).is_staff
    member_remove(member=member)
    assert not _fresh(adam).is_staff
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-123-456")
    member_remove(member=member_set(organization=acme, user=root, role="viewer"))
    assert _fresh(root).is_staff and _fresh(root).is_superuser


def test_an_unknown_role_is_refused_and_nothing_is_saved() -> None:
    acme = factories.organization("Acme")
    with pytest.raises(MemberRejected, match="unknown role 'owner'"):
        member_set(organization=acme, user=_user("eve"), role="owner")
    assert not OrganizationMember.objects.exists()


def test_a_role_in_one_organization_is_never_lent_to_another() -> None:
    acme, globex = factories.organization("Acme"), factories.organization("Globex")
    gina = _user("gina")
    member_set(organization=acme, user=gina, role="viewer")
    member_set(organization=globex, user=gina, role="officer")
    gina = _fresh(gina)
    assert organizations_granting(gina, "citations.view_queryexecution") == [globex.pk]
    assert organizations_granting(gina, "documents.add_organizationmember") == []


def _admin_of(org: Organization, name: str = "adam") -> Client:
    client = Client()
    client.force_login(member_set(organization=org, user=_user(name), role="admin").user)
    return client


def _inline_post(org: Organization, rows: list[dict[str, str]]) -> dict[str, str]:
    """The organization page's form: its name and the members inline."""
    existing = list(OrganizationMember.objects.filter(organization=org).order_by("pk"))
    data = {
        "name": org.name,
        "members-TOTAL_FORMS": str(len(existing) + len(rows)),
        "members-INITIAL_FORMS": str(len(existing)),
        "members-MIN_NUM_FORMS": "0",
        "members-MAX_NUM_FORMS": "1000",
    }
    for n, member in enumerate(existing):
        data |= {
            f"members-{n}-id": str(member.pk),
            f"members-{n}-organization": str(org.pk),
            f"members-{n}-role": member.role,
        }
    for n, row in enumerate(rows, start=len(existing)):
        data |= {f"members-{n}-organization": str(org.pk)} | {
            f"members-{n}-{key}": value for key, value in row.items()
        }
    return data


def test_an_admin_adds_an_officer_on_the_organizations_page_in_one_step() -> None:
    acme = factories.organization("Acme")
    client = _admin_of(acme)
    page = client.get(f"/admin/documents/organization/{acme.pk}/change/")
    assert page.status_code == 200
    assert "members and their roles" in page.content.decode().lower()

    response = client.post(
        f"/admin/documents/organization/{acme.pk}/change/",
        _inline_post(acme, [{"username": "olivia", "email": "o@example.com", "role": "officer"}]),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    olivia = get_user_model().objects.get(username="olivia")
    assert olivia.email == "o@example.com" and not olivia.has_usable_password()
    assert olivia.is_staff
    assert OrganizationMember.objects.get(user=olivia).role == "officer"
    assert olivia.has_perm("audit.view_evidenceentry")


def test_the_members_inline_refuses_a_person_twice_and_a_row_without_a_name() -> None:
    acme = factories.organization("Acme")
    client = _admin_of(acme)
    twice = client.post(
        f"/admin/documents/organization/{acme.pk}/change/",
        _inline_post(acme, [{"username": "adam", "role": "viewer"}]),
    )
    assert twice.status_code == 200 and "Already a member: adam" in twice.content.decode()
    nameless = client.post(
        f"/admin/documents/organization/{acme.pk}/change/",
        _inline_post(acme, [{"username": "", "role": "officer"}]),
    )
    assert nameless.status_code == 200
    assert "Name the person by their username" in nameless.content.decode()
    assert OrganizationMember.objects.filter(organization=acme).count() == 1


def test_an_officer_reads_the_organizations_page_but_cannot_change_its_members() -> None:
    acme = factories.organization("Acme")
    client = Client()
    client.force_login(member_set(organization=acme, user=_user("olivia"), role="officer").user)
    assert client.get(f"/admin/documents/organization/{acme.pk}/change/").status_code == 200
    response = client.post(
        f"/admin/documents/organization/{acme.pk}/change/",
        _inline_post(acme, [{"username": "mallory", "role": "admin"}]),
    )
    assert response.status_code == 403
    assert not get_user_model().objects.filter(username="mallory").exists()


def test_an_admin_of_one_organization_cannot_open_anothers_page() -> None:
    acme, globex = factories.organization("Acme"), factories.organization("Globex")
    client = _admin_of(acme)
    response = client.get(f"/admin/documents/organization/{globex.pk}/change/")
    assert response.status_code == 302  # "does not exist" for them: back to the index
    response = client.post(
        f"/admin/documents/organization/{globex.pk}/change/",
        _inline_post(globex, [{"username": "mallory", "role": "admin"}]),
    )
    assert response.status_code in (302, 403, 404)
    assert not OrganizationMember.objects.filter(organization=globex).exists()


def test_add_member_gives_changes_and_creates() -> None:
    acme = factories.organization("Acme")
    out = io.StringIO()
    call_command("add_member", "Acme", "olivia", "officer", stdout=out)
    assert "olivia is now officer of Acme" in out.getvalue()
    assert "changepassword olivia" in out.getvalue()  # a new account
    olivia = get_user_model().objects.get(username="olivia")
    assert olivia.is_staff and OrganizationMember.objects.get(user=olivia).role == "officer"

    out = io.StringIO()
    call_command("add_member", "Acme", "olivia", "viewer", stdout=out)
    assert "changepassword" not in out.getvalue()
    assert OrganizationMember.objects.get(user=olivia, organization=acme).role == "viewer"
    assert not get_user_model().objects.get(username="olivia").is_staff


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Nowhere", "olivia", "viewer"], "unknown organization 'Nowhere'"),
        (["Acme", "x" * 151, "viewer"], "1 to 150 characters"),
        (["Acme", "  ", "viewer"], "1 to 150 characters"),
    ],
)
def test_add_member_refuses_bad_input_clearly(args: list[str], message: str) -> None:
    factories.organization("Acme")
    with pytest.raises(CommandError, match=message):
        call_command("add_member", *args)
    assert not OrganizationMember.objects.exists()


def test_add_member_refuses_an_unknown_role() -> None:
    factories.organization("Acme")
    with pytest.raises(CommandError, match="invalid choice: 'owner'"):
        call_command("add_member", "Acme", "olivia", "owner")


def test_create_api_key_gives_the_key_its_role() -> None:
    from documents.models import ApiKey

    factories.organization("Acme")
    out = io.StringIO()
    call_command("create_api_key", "--organization", "Acme", "--role", "viewer", stdout=out)
    assert out.getvalue().startswith("pvk_")
    assert ApiKey.objects.get().role == "viewer"
    call_command("create_api_key", "--organization", "Acme", stdout=io.StringIO())
    assert sorted(ApiKey.objects.values_list("role", flat=True)) == ["editor", "viewer"]
