"""JSON converter: headings follow the key path, keys and values surface, errors are exact."""

from __future__ import annotations

import json
import re

import pytest

from documents.converters import ConversionError
from documents.converters.base import Conversion
from documents.converters.json_ import JsonConverter
from tests.support.corpus import CORPUS, nonempty


def convert(data: bytes) -> Conversion:
    return JsonConverter().convert(data)


def heading_paths(markdown: str) -> list[list[str]]:
    """The heading chain in force at each heading, as the chunker derives it."""
    stack: list[str] = []
    out = []
    for m in re.finditer(r"^(#{1,6}) (.+)$", markdown, re.M):
        level = len(m.group(1))
        stack = stack[: level - 1] + [m.group(2)]
        out.append(list(stack))
    return out


def test_markitdown_test_json_keys_and_values_surface() -> None:
    result = convert((CORPUS / "markitdown/test_files/test.json").read_bytes())
    vectors = json.loads((CORPUS / "markitdown/DERIVED_test_vectors.json").read_text("utf-8"))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v["filename"] == "test.json")
    for s in nonempty(vector["must_include"], "strings test.json must include"):
        assert s in result.markdown
    assert "- **key1**: string_value" in result.markdown
    assert "- **key2**: 1234" in result.markdown
    assert "- list_value1" in result.markdown
    assert result.line_pages == [] and result.spans == []


def test_headings_follow_the_json_path() -> None:
    doc = {
        "company": {"name": "ACME", "address": {"city": "Paris", "zip": "75001"}},
        "tags": ["a", "b"],
    }
    md = convert(json.dumps(doc).encode()).markdown
    assert ["company", "address"] in heading_paths(md)
    assert ["tags"] in heading_paths(md)
    assert md.index("## address") < md.index("- **city**: Paris")
    assert "- **name**: ACME" in md


def test_arrays_of_flat_objects_become_tables_and_nested_objects_indexed_headings() -> None:
    doc = {
        "people": [{"name": "Ann", "age": 31}, {"name": "Bob|Jr", "age": None}],
        "orders": [{"id": 1, "items": [1, 2]}],
    }
    md = convert(json.dumps(doc).encode()).markdown
    assert "| name | age |" in md and "| Ann | 31 |" in md and "| Bob\\|Jr | null |" in md
    assert ["orders", "orders[0]"] in heading_paths(md)
    assert ["orders", "orders[0]", "items"] in heading_paths(md)


def test_depth_beyond_six_uses_dotted_headings() -> None:
    doc: dict = {"leaf": "deep value"}
    for key in "hgfedcba":
        doc = {key: doc}
    md = convert(json.dumps(doc).encode()).markdown
    levels = [len(m.group(1)) for m in re.finditer(r"^(#+) ", md, re.M)]
    assert max(levels) == 6
    assert "###### f.g.h" in md and "- **leaf**: deep value" in md


def test_invalid_json_reports_line_and_column() -> None:
    with pytest.raises(
        ConversionError, match=r"^invalid JSON at line 3, column 5: Expecting ',' delimiter$"
    ):
        convert(b'{\n  "a": 1\n    "b": 2\n}')
    with pytest.raises(ConversionError, match=r"invalid JSON at line 1, column \d+"):
        convert((CORPUS / "hostile/qpdf/truncated.json").read_bytes())


def test_pathological_depth_is_a_conversion_error() -> None:
    with pytest.raises(ConversionError, match="too deep"):
        convert(b"[" * 100_000 + b"]" * 100_000)
