"""Evaluation runs in the admin: the list, a run's figures, plots and items, starting
a run (the officers' one action: ``evaluation.start_evaluation``) and comparing two."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from citations.models import App
from core.admin_scoping import EvidenceAdmin
from core.role_backend import organizations_granting
from evaluation.goldsets import MAX_GOLD_BYTES, GoldSetError, goldset_parse
from evaluation.models import EvaluationRun, RunStatus
from evaluation.plots import PLOT_NAMES, plot_png
from evaluation.scoring import worst_first
from evaluation.selectors import run_progress, runs_compare
from evaluation.services import MAX_SEEDS, EvaluationError, evaluation_run_start

START_PERMISSION = "evaluation.start_evaluation"
REFRESH_SECONDS = 3


class StartForm(forms.Form):
    app = forms.ModelChoiceField(queryset=App.objects.none())
    gold = forms.FileField(label="Gold set (JSON Lines)")
    seeds = forms.IntegerField(min_value=1, max_value=MAX_SEEDS, initial=1)
    limit = forms.IntegerField(min_value=1, required=False, help_text="the first N items only")

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        apps = App.objects.select_related("organization").order_by("name")
        if not user.is_superuser:
            apps = apps.filter(
                organization_id__in=organizations_granting(user, "evaluation.start_evaluation")
            )
        cast(forms.ModelChoiceField, self.fields["app"]).queryset = apps

    def clean_gold(self) -> object:
        upload = self.cleaned_data["gold"]
        try:
            return goldset_parse(name=upload.name, data=upload.read(MAX_GOLD_BYTES + 1))
        except GoldSetError as exc:
            raise forms.ValidationError(exc.problems) from exc


def _status(run: EvaluationRun) -> str:
    outcome = getattr(run, "outcome", None)
    if outcome is not None:
        return outcome.status
    return RunStatus.RUNNING if getattr(run, "done", 0) else RunStatus.QUEUED


@admin.register(EvaluationRun)
class EvaluationRunAdmin(EvidenceAdmin):
    list_display = [
        "gold_name",
        "app",
        "organization",
        "gold_sha256_short",
        "settings_short",
        "status",
        "progress",
        "citation_match_rate",
        "coverage",
        "mrr",
        "started_by_label",
        "created_at",
    ]
    list_filter = [("organization", admin.RelatedOnlyFieldListFilter), "origin", "created_at"]
    list_select_related = ["app", "organization", "outcome"]
    search_fields = ["gold_name", "gold_sha256", "app__name", "=id"]
    actions = ["compare_selected"]
    change_form_template = "admin/evaluation/evaluationrun/run.html"
    change_list_template = "admin/evaluation/evaluationrun/change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(done=Count("items"))

    @admin.display(description="gold sha256")
    def gold_sha256_short(self, run: EvaluationRun) -> str:
        return run.gold_sha256[:12]

    @admin.display(description="settings")
    def settings_short(self, run: EvaluationRun) -> str:
        s = run.app_settings
        return f"{s.get('generator')} top_k={s.get('top_k')} min_score={s.get('min_score')}"

    @admin.display(description="status")
    def status(self, run: EvaluationRun) -> str:
        return _status(run)

    @admin.display(description="progress")
    def progress(self, run: EvaluationRun) -> str:
        return f"{getattr(run, 'done', 0)}/{run.total}"

    def _figure(self, run: EvaluationRun, name: str) -> object:
        outcome = getattr(run, "outcome", None)
        value = outcome.figures.get(name) if outcome else None
        return "–" if value is None else value

    @admin.display(description="citation match")
    def citation_match_rate(self, run: EvaluationRun) -> object:
        return self._figure(run, "citation_match_rate")

    @admin.display(description="coverage")
    def coverage(self, run: EvaluationRun) -> object:
        return self._figure(run, "coverage")

    @admin.display(description="MRR")
    def mrr(self, run: EvaluationRun) -> object:
        return self._figure(run, "mrr")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        can_start = request.user.has_perm(START_PERMISSION)
        return super().changelist_view(request, {**(extra_context or {}), "can_start": can_start})

    @admin.action(description="Compare the two selected runs")
    def compare_selected(self, request: HttpRequest, queryset: QuerySet) -> object:
        runs = list(queryset.order_by("created_at").values_list("pk", flat=True)[:3])
        if len(runs) != 2:
            self.message_user(request, "Select exactly two runs to compare.", messages.WARNING)
            return None
        url = reverse("admin:evaluation_evaluationrun_compare")
        return HttpResponseRedirect(f"{url}?a={runs[0]}&b={runs[1]}")

    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="evaluation_evaluationrun_start"),
            path("compare/", wrap(self.compare_view), name="evaluation_evaluationrun_compare"),
            path(
                "<uuid:object_id>/plot/<str:name>.png",
                wrap(self.plot_view),
                name="evaluation_evaluationrun_plot",
            ),
            *super().get_urls(),
        ]

    def _run(self, request: HttpRequest, object_id: object) -> EvaluationRun:
        """A run of the user's organizations (404 for anyone else's or a bad id)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            return get_object_or_404(self.get_queryset(request), pk=object_id)
        except (ValueError, ValidationError) as exc:  # a malformed id is an unknown one
            raise Http404("no such evaluation run") from exc

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        run = self._run(request, object_id)
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), **_run_context(run)}
        )

    def plot_view(self, request: HttpRequest, object_id: object, name: str) -> HttpResponse:
        run = self._run(request, object_id)
        if name not in PLOT_NAMES:
            raise Http404("no such plot")
        items = list(run.items.order_by("position"))
        png = plot_png(name, items, int(run.app_settings.get("top_k", 10)))
        return HttpResponse(png, content_type="image/png")

    def compare_view(self, request: HttpRequest) -> TemplateResponse:
        before = self._run(request, request.GET.get("a", ""))
        after = self._run(request, request.GET.get("b", ""))
        rows = runs_compare(before=before, after=after)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Compare evaluation runs",
            "before": before,
            "after": after,
            "changed": [r for r in rows if r.changed],
            "unchanged": sum(not r.changed for r in rows),
        }
        return TemplateResponse(request, "admin/evaluation/evaluationrun/compare.html", context)

    def start_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(START_PERMISSION):
            raise PermissionDenied
        user = cast(User, request.user)  # the admin site lets only signed-in staff in
        form = StartForm(request.POST or None, request.FILES or None, user=user)
        if request.method == "POST" and form.is_valid():
            try:
                run = evaluation_run_start(
                    app=form.cleaned_data["app"],
                    gold=form.cleaned_data["gold"],
                    seeds=form.cleaned_data["seeds"],
                    limit=form.cleaned_data["limit"],
                    user=user,
                    origin="admin",
                )
            except EvaluationError as exc:
                form.add_error(None, str(exc))
            else:
                self.message_user(request, f"Evaluation run {run.pk} queued.", messages.SUCCESS)
                return HttpResponseRedirect(
                    reverse("admin:evaluation_evaluationrun_change", args=[run.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Start an evaluation run",
            "form": form,
        }
        return TemplateResponse(request, "admin/evaluation/evaluationrun/start.html", context)


def _run_context(run: EvaluationRun) -> dict:
    outcome = getattr(run, "outcome", None)
    done, total = run_progress(run)
    items = list(run.items.select_related("query").order_by("position"))
    figures = outcome.figures if outcome else {}
    return {
        "run": run,
        "outcome": outcome,
        "run_status": _status(run),
        "done": done,
        "total": total,
        "percent": int(100 * done / total) if total else 100,
        "refresh": REFRESH_SECONDS if outcome is None else None,
        "figures": figures,
        "targets": figures.get("targets", {}),
        "plots": [
            (name, reverse("admin:evaluation_evaluationrun_plot", args=[run.pk, name]))
            for name in PLOT_NAMES
        ]
        if items
        else [],
        "items": items,
        "worst": worst_first(items)[:20],
    }
