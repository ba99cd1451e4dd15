"""Members and their roles on one admin page per organization.

An administrator of the organization (role ``admin``) adds a person by username
(made on the spot when new, without a password), picks a role, and is done:
reaching the admin follows the role (core.members), no groups or staff flags
to set by hand.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from core.members import MAX_USERNAME, staff_flag_sync, user_for_member
from documents.models import OrganizationMember


class MemberForm(forms.ModelForm):
    """A member's row: the person by username (new rows), and their role."""

    username = forms.CharField(max_length=MAX_USERNAME, required=False)
    email = forms.EmailField(required=False, help_text="for a new person only")

    class Meta:
        model = OrganizationMember
        fields = ["role"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["username"].initial = self.instance.user.get_username()
            self.fields["username"].disabled = True
            self.fields["email"].disabled = True

    def clean_username(self) -> str:
        username = str(self.cleaned_data.get("username") or "").strip()
        if not self.instance.pk and not username and self.has_changed():
            raise forms.ValidationError("Name the person by their username.")
        return username

    def save(self, commit: bool = True) -> OrganizationMember:
        member = super().save(commit=False)
        if not member.pk:
            username = self.cleaned_data["username"]
            member.user = user_for_member(username=username, email=self.cleaned_data["email"])
        if commit:
            member.save()
        return member


class MemberFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        named = [
            form.cleaned_data.get("username")
            for form in self.forms
            if form.cleaned_data and not form.instance.pk
        ]
        taken = set(
            self.instance.members.values_list("user__username", flat=True)
            if self.instance.pk
            else []
        )
        repeated = {name for name in named if name and (name in taken or named.count(name) > 1)}
        if repeated:
            raise forms.ValidationError(f"Already a member: {', '.join(sorted(repeated))}.")


class MemberInline(admin.TabularInline):
    model = OrganizationMember
    form = MemberForm
    formset = MemberFormSet
    fields = ["username", "email", "role"]
    extra = 1
    verbose_name = "member"
    verbose_name_plural = "members and their roles"


def members_saved(request: HttpRequest, formset: BaseInlineFormSet) -> None:
    """After the inline is saved: everyone whose membership changed gets the admin
    access their roles now say (``staff_flag_sync``)."""
    users = {form.instance.user_id for form in formset.forms if form.instance.user_id}
    users |= {obj.user_id for obj in formset.deleted_objects}
    for user in get_user_model()._default_manager.filter(pk__in=users):
        staff_flag_sync(user)
