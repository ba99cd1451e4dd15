"""Chunking over real Markdown: exact slices, sections, budget, overlap, tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.chunking import chunk_markdown
from documents.locating import Locator
from documents.markdown_structure import MarkdownStructure
from documents.tokens import count_tokens
from tests.support import squad
from tests.support.corpus import nonempty
from tests.support.invariants import headings_in_force

TARGET, OVERLAP = 120, 24


def _documents(corpus: Path) -> list[tuple[str, str]]:
    paths = (
        nonempty(sorted((corpus / "docling/md").glob("*.md")), "docling Markdown files")
        + nonempty(
            sorted((corpus / "markitdown/test_files/expected_outputs").glob("*.md")),
            "markitdown expected outputs",
        )
        + nonempty(
            sorted((corpus / "docling/docx/groundtruth").glob("*.md")), "docling DOCX truths"
        )
    )
    docs = [(p.name, p.read_text()) for p in paths if p.read_text().strip()]
    docs.append(("squad.md", squad.article_markdown(squad.load(corpus)[0])))
    return docs


def test_every_chunk_is_an_exact_slice_with_the_right_lines_and_headings(corpus: Path) -> None:
    for name, markdown in _documents(corpus):
        structure = MarkdownStructure(markdown)
        locator = Locator(structure, line_pages=[])
        for span in chunk_markdown(structure, target=TARGET, overlap=OVERLAP):
            text = markdown[span.char_start : span.char_end]
            assert text == text.strip() and text, name
            locations = locator.locate(span.char_start, span.char_end)
            first, last = locations[0], locations[-1]
            assert first.line_number_start == markdown.count("\n", 0, span.char_start) + 1
            assert last.line_number_end == markdown.count("\n", 0, span.char_end - 1) + 1
            # one location per section the chunk touches, each under its own headings
            for location in locations:
                assert location.hierarchy == headings_in_force(markdown, location.char_start)
                assert location.hierarchy == headings_in_force(markdown, location.char_end - 1)


def test_chunks_respect_the_budget_and_cover_the_whole_body(corpus: Path) -> None:
    for name, markdown in _documents(corpus):
        structure = MarkdownStructure(markdown)
        spans = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
        covered = [False] * len(markdown)
        for span in spans:
            assert span.token_count <= TARGET, (name, span)
            for i in range(span.char_start, span.char_end):
                covered[i] = True
        missing = "".join(ch for ch, hit in zip(markdown, covered, strict=True) if not hit)
        assert missing.strip() == "", f"{name}: text left out of every chunk: {missing[:80]!r}"


def test_consecutive_chunks_of_a_section_overlap_within_the_budget(corpus: Path) -> None:
    markdown = squad.article_markdown(squad.load(corpus)[1]).replace("## Paragraph", "Paragraph")
    structure = MarkdownStructure(markdown)
    spans = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    assert len(spans) > 10
    overlaps = 0
    for before, after in zip(spans, spans[1:], strict=False):
        assert after.char_start > before.char_start
        if after.char_start < before.char_end:
            overlaps += 1
            assert count_tokens(markdown[after.char_start : before.char_end]) <= OVERLAP + 2
    assert overlaps > 0


def test_a_chunk_straddles_sections_only_when_the_earlier_one_is_tiny(corpus: Path) -> None:
    for name, markdown in _documents(corpus):
        structure = MarkdownStructure(markdown)
        starts = [h.char_start for h in structure.headings]
        for span in chunk_markdown(structure, target=TARGET, overlap=OVERLAP):
            inner = [s for s in starts if span.char_start < s < span.char_end]
            previous = span.char_start
            for heading_start in inner:
                before = markdown[previous:heading_start]
                assert count_tokens(before) < TARGET // 4 + 8, (name, before[:60])
                previous = heading_start


def test_tables_are_cut_between_rows_only(corpus: Path) -> None:
    rows = "\n".join(
        f"| {i} | {p['context'][:90].replace('|', ' ')} |"
        for i, p in enumerate(squad.load(corpus)[2]["paragraphs"][:40])
    )
    markdown = f"# Table\n\n| n | text |\n|---|---|\n{rows}\n"
    structure = MarkdownStructure(markdown)
    spans = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    assert len(spans) > 3
    for span in spans:
        assert span.char_start == 0 or markdown[span.char_start - 1] == "\n"
        assert span.char_end == len(markdown.rstrip()) or markdown[span.char_end] == "\n"
        lines = markdown[span.char_start : span.char_end].split("\n")
        for line in (line for line in lines if line and not line.startswith("#")):
            assert line.startswith("|") and line.endswith("|"), line


@pytest.mark.parametrize("body_start", [0, 23])
def test_front_matter_is_never_a_heading_or_chunk(body_start: int) -> None:
    markdown = "---\ntitle: Handbook\n---\n# Leave\n\nTwenty days.\n"
    structure = MarkdownStructure(markdown, body_start=23)
    assert [h.text for h in structure.headings] == ["Leave"]
    spans = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    assert markdown[spans[0].char_start :].startswith("# Leave")
    assert all(s.char_start >= 23 for s in spans)
    del body_start


def test_pages_split_a_chunk_into_one_location_per_page() -> None:
    markdown = "# A\n\nline on page one\nline on page two\nmore on two\n"
    structure = MarkdownStructure(markdown)
    locator = Locator(structure, line_pages=[1, 1, 1, 2, 2, 2])
    [span] = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    first, second = locator.locate(span.char_start, span.char_end)
    assert (first.page_number, second.page_number) == (1, 2)
    assert (
        markdown[first.char_start : first.char_end] + markdown[second.char_start : second.char_end]
        == markdown[span.char_start : span.char_end]
    )
    assert (second.line_number_start, second.line_number_end) == (4, 5)
    assert second.hierarchy == ["A"]


def test_a_chunk_taking_in_a_tiny_section_has_a_location_per_section() -> None:
    """A title with one short line rides along with the next section: the chunk's
    heading path is the title's (where it starts), the second location's is the
    subsection's, so a sentence quoted from it names its own section."""
    body = "Hotel rooms are booked through the travel desk at most three weeks ahead. " * 4
    markdown = f"# Travel policy\n\nFor all staff.\n\n## Hotels\n\n{body}\n"
    structure = MarkdownStructure(markdown)
    [span] = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    first, second = Locator(structure, line_pages=[]).locate(span.char_start, span.char_end)
    assert (first.hierarchy, second.hierarchy) == (["Travel policy"], ["Travel policy", "Hotels"])
    assert markdown[first.char_start : first.char_end] == "# Travel policy\n\nFor all staff.\n\n"
    assert (second.line_number_start, second.char_start) == (5, markdown.index("## Hotels"))
    assert (first.page_number, second.page_number) == (None, None)


def test_a_long_arabic_paragraph_is_cut_after_its_question_marks() -> None:
    """A paragraph over budget is cut between sentences; "؟" ends one too."""
    question = "هل يمكن استخدام مكتبة pandas لتحليل البيانات الكبيرة بكفاءة عالية في العمل؟ "
    markdown = "# أسئلة\n\n" + question * 12 + "\n"
    spans = chunk_markdown(MarkdownStructure(markdown), target=TARGET, overlap=OVERLAP)
    assert len(spans) > 1
    assert all(markdown[s.char_start : s.char_end].endswith("؟") for s in spans)


def test_the_token_map_counts_exactly_as_one_whole_text_encoding(corpus: Path) -> None:
    """TokenMap tokenizes line by line: every offset must equal the whole text's."""
    from documents.tokens import TokenMap, _tokenizer

    texts = [markdown for _, markdown in _documents(corpus)] + [
        "Ünïcödé  wörds\r\nacross\n\nlines: 東京は日本の首都です。\n😀 emoji-split\tтабы\n",
        "",
        "\n\n\n",
    ]
    for text in texts:
        whole = _tokenizer().encode(text, add_special_tokens=False).offsets
        mapped = TokenMap(text)
        assert mapped.starts == [start for start, _ in whole]
        assert mapped.ends == [end for _, end in whole]
