"""PPTX converter: slide sections, slide numbers per line, notes, tables, hostile decks."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from documents.converters import ConversionError
from documents.converters.pptx import PptxConverter

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
PPTX = sorted(
    p.relative_to(CORPUS).as_posix()
    for d in ("markitdown", "docling", "python-pptx")
    for p in (CORPUS / d).rglob("*.pptx")
)


def convert(name: str):
    return PptxConverter().convert((CORPUS / name).read_bytes())


def recall(truth: str, ours: str) -> float:
    def words(text: str) -> Counter:
        return Counter(re.findall(r"\w+", re.sub(r"<!--.*?-->", " ", text, flags=re.S).lower()))

    want, have = words(truth), words(ours)
    return sum(min(n, have[w]) for w, n in want.items()) / max(sum(want.values()), 1)


def sections(result) -> dict[int, list[str]]:
    """Lines under each '# Slide n' heading, keyed by n."""
    out: dict[int, list[str]] = {}
    current = 0
    for line in result.markdown.split("\n"):
        m = re.match(r"# Slide (\d+)(: .*)?$", line)
        if m:
            current = int(m.group(1))
        out.setdefault(current, []).append(line)
    return out


@pytest.mark.parametrize("name", [*PPTX, "hostile/docling/powerpoint_malformed_pictures.pptx"])
def test_every_deck_converts_and_each_line_has_its_slide(name):
    result = convert(name)
    lines = result.markdown.split("\n")
    assert len(result.line_pages) == len(lines)
    slide = 0
    for line, page in zip(lines, result.line_pages, strict=True):
        m = re.match(r"# Slide (\d+)", line)
        if m:
            slide = int(m.group(1))
        if line.strip():
            assert page == slide, (line, page, slide)
    assert slide == result.page_count


def test_markitdown_vectors():
    vectors = json.loads((CORPUS / "markitdown/DERIVED_test_vectors.json").read_text("utf-8"))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v["filename"] == "test.pptx")
    md = convert("markitdown/test_files/test.pptx").markdown
    for s in vector["must_include"]:
        assert s in md, s
    for s in vector["must_not_include"]:
        assert s not in md


def test_slide_titles_and_tables():
    result = convert("markitdown/test_files/test.pptx")
    heads = [ln for ln in result.markdown.split("\n") if ln.startswith("# ")]
    assert (
        heads[0]
        == "# Slide 1: AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation"
    )
    assert heads[2] == "# Slide 3: A table to test parsing:"
    table = sections(result)[3]
    assert "| ColA | ColB | ColC | ColD | ColE | ColF |" in table
    assert "| 7 | 8 | 9 | 1b92870d-e3b5-4e65-8153-919f4ff45592 | 11 | 12 |" in table


def test_speaker_notes_are_marked_and_belong_to_their_slide():
    result = convert("python-pptx/sld-notes.pptx")
    by_slide = sections(result)
    assert by_slide[1][0] == "# Slide 1"
    assert "### Notes" in by_slide[1] and "Notes" in by_slide[1]
    assert "### Notes" not in by_slide[2]
    assert result.metadata["slides_with_notes"] == 1


def test_external_hyperlink_text_kept():
    md = convert("python-pptx/ext-rels.pptx").markdown
    assert "Code is available at the python-pptx repository on GitHub" in md


def test_malformed_pictures_do_not_stop_conversion():
    md = convert("hostile/docling/powerpoint_malformed_pictures.pptx").markdown
    for s in (
        "Slide With Missing BlipFill",
        "Slide With Dangling Rel",
        "Slide With Wrong Content Type",
    ):
        assert s in md


def test_ground_truth_recall():
    pairs = [
        (f"docling/pptx/{p.name[:-3]}", p)
        for p in (CORPUS / "docling/pptx/groundtruth").glob("*.md")
    ]
    pairs.append(
        (
            "hostile/docling/powerpoint_malformed_pictures.pptx",
            CORPUS / "hostile/docling/powerpoint_malformed_pictures.pptx.md",
        )
    )
    scores = {n: recall(t.read_text("utf-8"), convert(n).markdown) for n, t in pairs}
    print("\n".join(f"{v:.3f} {k}" for k, v in sorted(scores.items())))
    # docling's powerpoint_comments ground truth includes reviewer comments, which we leave out
    assert scores["docling/pptx/powerpoint_with_image.pptx"] == 1.0
    assert min(scores.values()) >= 0.55
    assert sum(scores.values()) / len(scores) >= 0.8


def test_fuzzed_deck_fails_cleanly():
    with pytest.raises(ConversionError, match="corrupt file"):
        convert("hostile/poi/clusterfuzz-POIFuzzer-5205835528404992.pptx")
