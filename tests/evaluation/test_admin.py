"""The evaluation pages of the admin: officers see their organization's runs with
figures, plots and items, compare two, and start one; nobody else sees them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from documents.models import Organization, OrganizationMember
from evaluation.models import EvaluationRun
from tests.evaluation.conftest import Shelf, gold_sample

pytestmark = pytest.mark.django_db


def _staff(org: Organization, name: str, *, officer: bool = True) -> Client:
    user = get_user_model().objects.create_user(name, password="pass-123-xyz", is_staff=True)
    role = "officer" if officer else "viewer"
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def runs(shelf: Shelf, tmp_path: Path) -> tuple[EvaluationRun, EvaluationRun, EvaluationRun]:
    """Two Acme runs of the same questions (the second with a stricter app) and a Globex one."""
    gold = gold_sample(shelf, tmp_path, every=29, count=4)
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(tmp_path / "a"))
    first = EvaluationRun.objects.latest("created_at")
    shelf.squad.min_score, saved = 0.99, shelf.squad.min_score
    shelf.squad.save()
    try:
        call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(tmp_path / "b"))
    finally:
        shelf.squad.min_score = saved
        shelf.squad.save()
    second = EvaluationRun.objects.latest("created_at")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"question": "How long are invoices kept?"}) + "\n")
    call_command("evaluate", app="Rules", gold=str(other), seeds=1, out=str(tmp_path / "c"))
    return first, second, EvaluationRun.objects.latest("created_at")


def test_an_officer_lists_only_the_runs_of_their_organization(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    first, second, globex = runs
    page = _staff(shelf.acme, "olivia").get("/admin/evaluation/evaluationrun/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/admin/evaluation/evaluationrun/{first.pk}/change/" in html
    assert f"/admin/evaluation/evaluationrun/{second.pk}/change/" in html
    assert str(globex.pk) not in html
    assert first.gold_sha256[:12] in html and "completed" in html and "4/4" in html
    assert "Start an evaluation" in html


def test_the_run_page_shows_figures_plots_and_items_linked_to_their_answers(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    first, _, _ = runs
    client = _staff(shelf.acme, "olivia")
    page = client.get(f"/admin/evaluation/evaluationrun/{first.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "citation_match_rate" in html and "coverage" in html and first.gold_sha256 in html
    for item in first.items.all():
        assert f"/admin/citations/queryexecution/{item.query_id}/change/" in html
    for name in ("delta_s", "latency", "first_correct_rank"):
        url = f"/admin/evaluation/evaluationrun/{first.pk}/plot/{name}.png"
        assert url in html
        plot = client.get(url)
        assert plot.status_code == 200 and plot["Content-Type"] == "image/png"
        assert plot.content[:4] == b"\x89PNG"
    assert client.get(f"/admin/evaluation/evaluationrun/{first.pk}/plot/x.png").status_code == 404


def test_two_runs_side_by_side_show_the_items_that_changed_verdict(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    first, second, _ = runs
    page = _staff(shelf.acme, "olivia").get(
        f"/admin/evaluation/evaluationrun/compare/?a={first.pk}&b={second.pk}"
    )
    assert page.status_code == 200
    html = page.content.decode()
    before = {(i.line, i.verdict) for i in first.items.all()}
    after = {(i.line, i.verdict) for i in second.items.all()}
    changed = {line for line, _ in before ^ after}
    assert changed, "min_score 0.99 should silence the answers"
    assert f"{len(changed)} question(s) changed verdict" in html
    assert html.count('<tr class="changed">') == len(changed)


def test_another_organization_gets_404_everywhere(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    first, second, _ = runs
    client = _staff(shelf.globex, "gus")
    base = "/admin/evaluation/evaluationrun"
    assert str(first.pk) not in client.get(f"{base}/").content.decode()
    assert client.get(f"{base}/{first.pk}/change/").status_code == 404
    assert client.get(f"{base}/{first.pk}/plot/delta_s.png").status_code == 404
    assert client.get(f"{base}/compare/?a={first.pk}&b={second.pk}").status_code == 404
    assert client.get(f"{base}/compare/?a=nonsense&b={second.pk}").status_code == 404


def test_an_officer_cannot_start_a_run_of_another_organizations_app(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    before = EvaluationRun.objects.count()
    client = _staff(shelf.globex, "gus")
    gold = io.BytesIO(b'{"question": "Where is Victoria?"}\n')
    gold.name = "g.jsonl"
    page = client.post(
        "/admin/evaluation/evaluationrun/start/", {"app": shelf.squad.pk, "gold": gold, "seeds": 1}
    )
    assert page.status_code == 200 and "Select a valid choice" in page.content.decode()
    assert EvaluationRun.objects.count() == before


def test_a_bad_gold_file_in_the_admin_names_its_lines(shelf: Shelf) -> None:
    client = _staff(shelf.acme, "olivia")
    gold = io.BytesIO(b'{"question": "ok"}\n{"paraphrases": []}\nnope\n')
    gold.name = "g.jsonl"
    page = client.post(
        "/admin/evaluation/evaluationrun/start/", {"app": shelf.squad.pk, "gold": gold, "seeds": 1}
    )
    html = page.content.decode()
    assert "line 2: no question" in html and "line 3: not JSON" in html
    assert not EvaluationRun.objects.exists()


def test_staff_without_the_start_permission_get_403(shelf: Shelf) -> None:
    client = _staff(shelf.acme, "vera", officer=False)
    assert client.get("/admin/evaluation/evaluationrun/start/").status_code == 403


def test_officers_may_view_runs_and_start_one_but_change_nothing(
    shelf: Shelf, runs: tuple[EvaluationRun, EvaluationRun, EvaluationRun]
) -> None:
    officer = get_user_model().objects.create_user("o2", is_staff=True)
    OrganizationMember.objects.create(organization=shelf.acme, user=officer, role="officer")
    assert officer.has_perm("evaluation.view_evaluationrun")
    assert officer.has_perm("evaluation.start_evaluation")
    assert not officer.has_perm("evaluation.change_evaluationrun")
    assert not officer.has_perm("evaluation.delete_evaluationrun")
    first, _, _ = runs
    client = _staff(shelf.acme, "olivia")
    assert client.post(f"/admin/evaluation/evaluationrun/{first.pk}/delete/").status_code == 403
    assert client.get("/admin/evaluation/evaluationrun/add/").status_code == 403
