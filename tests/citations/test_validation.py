"""The citation validator's return codes, from Python, REST and the command line."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from citations.models import RetrievalHit
from citations.services import query_execute
from citations.validation import RETURN_CODES, validate_citations
from documents.fulltext import ANALYZER
from tests.citations.conftest import Library

pytestmark = pytest.mark.django_db


@pytest.fixture
def payloads(library: Library) -> tuple[list[dict], str]:
    execution = query_execute(app=library.handbook, question="How long are invoices kept?")
    hits = RetrievalHit.objects.filter(query=execution).order_by("k_pos")
    return [h.payload for h in hits], execution.index_hash


def _same_section(items: list[dict]) -> list[dict]:
    first = items[0]["section_id"]
    return [i for i in items if i["section_id"] == first]


def test_a_real_payload_is_ok(payloads: tuple[list[dict], str]) -> None:
    items, index_hash = payloads
    assert (
        validate_citations(_same_section(items), live_index_hash=index_hash, read_analyzer=ANALYZER)
        == "ok"
    )


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda items: [], "empty_citations"),
        (lambda items: [{k: v for k, v in items[0].items() if k != "rev"}], "missing_rev"),
        (lambda items: [{**items[0], "tokens": None}], "missing_tokens"),
        (
            lambda items: [{**items[0], "offsets": {"start": 10, "end": 10, "unit": "char"}}],
            "bad_offsets",
        ),
        (lambda items: [{**items[0], "offsets": {"start": "a", "end": 3}}], "bad_offsets"),
        (
            lambda items: [
                items[0],
                {**items[0], "offsets": {**items[0]["offsets"], "unit": "token"}},
            ],
            "bad_offsets",
        ),
        (
            lambda items: [
                items[0],
                {**items[0], "section_id": items[0]["section_id"] + " > other"},
            ],
            "cross_section_reuse",
        ),
        (lambda items: [{**items[0], "score_raw": None, "score_norm": None}], "missing_score"),
        (lambda items: [{**items[0], "index_hash": "0" * 64}], "mismatch_index_hash"),
        (lambda items: [{**items[0], "analyzer": "simple"}], "analyzer_mismatch"),
        (
            lambda items: [{**items[0], "offsets": {**items[0]["offsets"], "unit": "page"}}],
            "bad_offsets",
        ),
        (lambda items: [{**items[0], "tokens": "many"}], "invalid_tokens"),
        (lambda items: [{**items[0], "tokens": True}], "invalid_tokens"),
        (lambda items: [{**items[0], "k_pos": "one"}], "invalid_k_pos"),
        (lambda items: [{**items[0], "k_final": -1}], "invalid_k_final"),
        (lambda items: [{**items[0], "score_raw": "high"}], "invalid_score_raw"),
        (lambda items: [{**items[0], "score_norm": 1.5}], "invalid_score_norm"),
        (lambda items: [{**items[0], "page": 2.5}], "invalid_page"),
        (lambda items: [{**items[0], "section_id": ["a", "b"]}], "invalid_section_id"),
        (lambda items: [{**items[0], "embed_model": 7}], "invalid_embed_model"),
    ],
)
def test_each_broken_rule_returns_its_code(
    payloads: tuple[list[dict], str], mutate: Callable[[list[dict]], list[dict]], code: str
) -> None:
    items, index_hash = payloads
    broken = mutate(copy.deepcopy(items))
    assert code in RETURN_CODES
    assert validate_citations(broken, live_index_hash=index_hash, read_analyzer=ANALYZER) == code


def test_cross_section_reuse_can_be_whitelisted(payloads: tuple[list[dict], str]) -> None:
    items, _ = payloads
    mixed = [items[0], {**items[0], "section_id": "elsewhere"}]
    assert validate_citations(mixed, allow_cross_section=True) == "ok"


def test_revision_lock(payloads: tuple[list[dict], str]) -> None:
    items, _ = payloads
    item = items[0]
    assert validate_citations([item], revisions={item["snippet_id"]: item["rev"]}) == "ok"
    assert (
        validate_citations([item], revisions={item["snippet_id"]: "9:deadbeef0000"})
        == "revision_mismatch"
    )


def test_rest_validator_checks_against_the_live_index(
    library: Library, payloads: tuple[list[dict], str]
) -> None:
    items, _ = payloads
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    ok = client.post("/v1/citations/validate", {"citations": [items[0]]}, format="json")
    assert ok.status_code == 200 and ok.json() == {"result": "ok"}
    stale = client.post(
        "/v1/citations/validate",
        {"citations": [{**items[0], "index_hash": "f" * 64}]},
        format="json",
    )
    assert stale.json() == {"result": "mismatch_index_hash"}
    locked = client.post(
        "/v1/citations/validate",
        {"citations": [{**items[0], "rev": "7:000000000000"}]},
        format="json",
    )
    assert locked.json() == {"result": "revision_mismatch"}
    # what only the live index knows: the stored chunk's span and the index's model
    start, end = items[0]["offsets"]["start"], items[0]["offsets"]["end"]
    for offsets, result in (
        ({"start": start, "end": end, "unit": "char"}, "ok"),
        ({"start": start + 1, "end": end - 1, "unit": "char"}, "ok"),  # a quote inside it
        ({"start": 0, "end": 1_000_000_000, "unit": "char"}, "bad_offsets"),
        ({"start": start, "end": end + 1, "unit": "char"}, "bad_offsets"),
        ({"start": 0, "end": 10, "unit": "token"}, "bad_offsets"),  # the store issued chars
    ):
        answer = client.post(
            "/v1/citations/validate",
            {"citations": [{**items[0], "offsets": offsets}]},
            format="json",
        )
        assert answer.json() == {"result": result}, offsets
    other_model = client.post(
        "/v1/citations/validate",
        {"citations": [{**items[0], "embed_model": "other"}]},
        format="json",
    )
    assert other_model.json() == {"result": "embed_model_mismatch"}
    cross = [items[0], {**items[0], "section_id": items[0]["section_id"] + " > other"}]
    for flag in ("false", "0", "yes", 0, None, [False]):
        refused = client.post(
            "/v1/citations/validate",
            {"citations": cross, "allow_cross_section": flag},
            format="json",
        )
        assert refused.status_code == 400, flag
        assert refused.json()["error"]["code"] == "invalid_allow_cross_section"
    for flag, result in ((False, "cross_section_reuse"), (True, "ok")):
        answer = client.post(
            "/v1/citations/validate",
            {"citations": cross, "allow_cross_section": flag},
            format="json",
        )
        assert answer.json() == {"result": result}, flag
    bad = client.post("/v1/citations/validate", {"citations": "nope"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "citations"
    assert (
        APIClient().post("/v1/citations/validate", {"citations": []}, format="json").status_code
        == 401
    )


def test_command_validates_a_query_and_a_payload_file(
    library: Library, payloads: tuple[list[dict], str], tmp_path: Path
) -> None:
    items, _ = payloads
    execution = query_execute(app=library.handbook, question="How long are invoices kept?")
    out = StringIO()
    call_command("validate_citations", str(execution.pk), stdout=out)
    assert json.loads(out.getvalue())["result"] == "ok"
    good = tmp_path / "good.json"
    good.write_text(json.dumps([items[0]]))
    call_command("validate_citations", "--file", str(good), stdout=StringIO())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**items[0], "offsets": {"start": 5, "end": 1}}]))
    with pytest.raises(CommandError, match="bad_offsets"):
        call_command("validate_citations", "--file", str(bad), stdout=StringIO())
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("validate_citations", "--file", str(garbage), stdout=StringIO())
