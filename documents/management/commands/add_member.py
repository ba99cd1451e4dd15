"""Make a user a member of an organization with a role (or change their role)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.members import MemberRejected, member_set, user_for_member
from core.roles import Role
from documents.models import Organization


class Command(BaseCommand):
    help = (
        "Give USER the ROLE in ORG (viewer, editor, officer or admin); an existing "
        "member's role is changed, an unknown user is created without a password."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("organization", help="organization name")
        parser.add_argument("username", help="an existing user's username")
        parser.add_argument("role", choices=Role.values, help="what the member may do")

    def handle(self, *args: object, **options: Any) -> None:
        organization = Organization.objects.filter(name=options["organization"]).first()
        if organization is None:
            raise CommandError(f"unknown organization {options['organization']!r}")
        username = str(options["username"]).strip()
        new = not get_user_model()._default_manager.filter(username=username).exists()
        try:
            user = user_for_member(username=username)
            member = member_set(organization=organization, user=user, role=options["role"])
        except MemberRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{username} is now {member.role} of {organization.name}")
        if new:
            self.stdout.write(f"new account: set a password: manage.py changepassword {username}")
