"""Deep JSON never reaches Python's recursive decoder: the depth scan, the upload
type sniffer, the JSON converter, and a deep upload through the real worker."""

from __future__ import annotations

import hashlib
import json

import pytest

from documents.converters.base import ConversionError
from documents.converters.json_ import JsonConverter
from documents.json_limits import (
    MAX_DOCUMENT_DEPTH,
    JsonTooDeep,
    json_depth_exceeds,
    json_loads_bounded,
)
from documents.models import File
from documents.sniffing import sniff
from documents.storage import original_open
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def test_the_depth_scan_counts_brackets_outside_strings_only() -> None:
    assert not json_depth_exceeds("[[[]]]", 3)
    assert json_depth_exceeds("[[[]]]", 2)
    assert json_depth_exceeds("[{}]" * 10 + "[[{[]}]]", 3)
    # brackets inside strings, escaped quotes included, are text
    assert not json_depth_exceeds(json.dumps(['[[[[\\"{{{{', '"]]]{{{'] * 3), 1)
    assert not json_depth_exceeds(json.dumps({"k": "[" * 10_000}), 1)


def test_a_text_past_the_limit_is_refused_before_decoding() -> None:
    assert json_loads_bounded(_nested(64), max_depth=64)["a"]["a"]
    for hostile in ("[" * 9000, "[" * 100_000 + "]" * 100_000, _nested(1000)):
        with pytest.raises(JsonTooDeep):
            json_loads_bounded(hostile, max_depth=64)
    with pytest.raises(ValueError, match="Expecting"):
        json_loads_bounded("[1,", max_depth=64)


@pytest.mark.parametrize("name", ["deep", "deep.json", "deep.txt"])
def test_the_sniffer_names_a_deep_upload_without_recursing(name: str) -> None:
    """``[`` × 9000 raised RecursionError in the sniffer: now it is JSON (so its
    conversion refuses it with the reason) or the text its name says."""
    kind = sniff(head=b"[" * 8192, name=name).kind
    assert kind == ("text" if name.endswith(".txt") else "json")


def test_the_converter_takes_its_depth_limit_and_refuses_one_level_more() -> None:
    at_limit = JsonConverter().convert(_nested(MAX_DOCUMENT_DEPTH).encode())
    assert at_limit.metadata["headings"] == MAX_DOCUMENT_DEPTH - 1
    for hostile in (_nested(MAX_DOCUMENT_DEPTH + 1), "[" * 9000):
        with pytest.raises(
            ConversionError, match=f"too deep: .* more than {MAX_DOCUMENT_DEPTH} levels"
        ):
            JsonConverter().convert(hostile.encode())


@pytest.mark.django_db(transaction=True)
def test_a_deep_json_upload_fails_readably_and_keeps_its_bytes(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source(factories.organization("Acme"), "Exports")
    data = b"[" * 9000 + b"]" * 9000
    record = factories.upload(source, "deep.json", data).file
    failed = wait_for_status(record.pk)
    assert failed.status == "failed"
    assert f"nest more than {MAX_DOCUMENT_DEPTH} levels" in failed.error_message
    assert "Traceback" not in failed.error_message
    with original_open(File.objects.get(pk=record.pk).storage_key) as stored:
        assert hashlib.sha256(stored.read()).hexdigest() == record.sha256
