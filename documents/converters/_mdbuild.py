"""Assemble Markdown line by line while recording each line's page and source boxes.

Every converter writes through ``MarkdownBuilder`` so that the two invariants
the chunker relies on hold by construction: one ``line_pages`` entry per
``markdown.split("\\n")`` line, and spans whose offsets are absolute in the
final Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from documents.converters.base import SourceSpan

Box = tuple[float, float, float, float]

_LEADING_MARKUP = re.compile(
    r"^(\s*)(#{1,6}(?=\s|$)|>|[-+*](?=\s)|\d{1,9}[.)](?=\s)|=+\s*$|-{3,}\s*$"
    r"|`{3,}|~{3,}|<(?=[A-Za-z/!?]))"
)


def escape_line_start(text: str) -> str:
    """Keep body text from being read as a heading/list/quote by Markdown, or as a
    code fence or HTML block, which would swallow the headings after it."""
    return _LEADING_MARKUP.sub(lambda m: m.group(1) + "\\" + m.group(2), text, count=1)


_LINK_SCHEMES = ("http://", "https://", "mailto:", "ftp://")
_URL_UNSAFE = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"})


def markdown_link(text: str, url: str) -> str:
    """``[text](url)`` for a link whose target a reader can follow (web or mail);
    the text alone for anything else (a file path, a script, a document-internal
    anchor), so the address is kept where it is worth keeping and never runs code."""
    target = _link_target(url)
    if not text.strip() or target is None:
        return text
    return f"[{_link_label(text)}]({target})"


def markdown_image(alt: str, name: str, extension: str = "") -> str:
    """``![alt](name.extension)`` for a picture's description. The destination is the
    shape's name cut to word characters ("Picture 4" -> ``Picture4``): one token
    CommonMark reads whole (a space would leave the line as text), never a path."""
    target = re.sub(r"\W", "", name) or "image"
    extension = re.sub(r"\W", "", extension)
    return f"![{_link_label(clean_inline(alt))}]({target}{'.' + extension if extension else ''})"


def markdown_link_lines(pieces: list[str], url: str) -> list[str]:
    """A link whose text runs over several Markdown lines (a page break inside it,
    each line on its own page): ``[`` before its text on the first line, ``](url)``
    after it on the last, one link as CommonMark reads a paragraph's lines. The
    pieces as they are for a link not worth keeping (see :func:`markdown_link`)."""
    if len(pieces) == 1:
        return [markdown_link(pieces[0], url)]
    target = _link_target(url)
    filled = [i for i, piece in enumerate(pieces) if piece.strip()]
    if not filled or target is None:
        return pieces
    linked = [_link_label(piece) for piece in pieces]
    linked[filled[0]] = "[" + linked[filled[0]]
    linked[filled[-1]] += f"]({target})"
    return linked


def _link_target(url: str) -> str | None:
    """The address as a link's destination; None for one not worth keeping."""
    target = clean_inline(url)
    return target.translate(_URL_UNSAFE) if target.lower().startswith(_LINK_SCHEMES) else None


def _link_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def clean_inline(text: str) -> str:
    """One physical line: no newlines, tabs or control characters."""
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    text = "".join(ch for ch in text if ch >= " " or ch == " ")
    return re.sub(r"[ \u00a0]{2,}", " ", text).strip()


def table_cell(text: object) -> str:
    """A cell that can sit inside ``| ... |`` without breaking the row."""
    return clean_inline("" if text is None else str(text)).replace("|", "\\|")


def table_lines(rows: Sequence[Sequence[object]]) -> list[str]:
    """GitHub-style table lines; the first row is the header."""
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return []
    out: list[str] = []
    for i, row in enumerate(rows):
        cells = [table_cell(c) for c in row] + [""] * (width - len(row))
        out.append("| " + " | ".join(cells) + " |")
        if i == 0:
            out.append("|" + " --- |" * width)
    return out


class MarkdownBuilder:
    """Accumulates Markdown lines, their pages and the spans behind them."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._pages: list[int | None] = []
        self._spans: list[SourceSpan] = []
        self._offset = 0  # absolute offset of the start of the next line

    @property
    def empty(self) -> bool:
        return not self._lines

    def line(
        self,
        text: str,
        page: int | None = None,
        spans: Iterable[tuple[int, int, int, Box]] = (),
    ) -> None:
        """Add one line; ``spans`` are ``(start, end, page, box)`` relative to the line."""
        if "\n" in text:
            raise ValueError("a Markdown line cannot contain a newline")
        for start, end, span_page, box in spans:
            if 0 <= start < end <= len(text) and text[start:end].strip():
                self._spans.append(
                    SourceSpan(
                        self._offset + start, self._offset + end, span_page, *map(float, box)
                    )
                )
        self._lines.append(text)
        self._pages.append(page)
        self._offset += len(text) + 1

    def blank(self, page: int | None = None) -> None:
        """A block separator; never two in a row and never at the start."""
        if self._lines and self._lines[-1] != "":
            self.line("", page)

    def heading(self, level: int, text: str, page: int | None = None, spans: Iterable = ()) -> None:
        """A single-line ATX heading surrounded by blank lines."""
        cleaned = clean_inline(text)
        if not cleaned:
            return
        if cleaned != text:
            spans = ()  # offsets no longer line up with the cleaned text
        text = cleaned
        prefix = "#" * max(1, min(6, level)) + " "
        self.blank(page)
        self.line(
            prefix + text, page, [(s + len(prefix), e + len(prefix), p, b) for s, e, p, b in spans]
        )
        self.blank(page)

    def build(self, paged: bool) -> tuple[str, list[int | None], list[SourceSpan]]:
        """Markdown ending with one newline; ``line_pages`` is [] when not ``paged``."""
        while self._lines and self._lines[-1] == "":
            self._lines.pop()
            self._pages.pop()
        last_page = self._pages[-1] if self._pages else (1 if paged else None)
        markdown = "\n".join(self._lines) + "\n" if self._lines else ""
        pages = [*self._pages, last_page] if self._lines else [last_page]
        if not paged:
            return markdown, [], self._spans
        # a blank separator line belongs to the page of the text before it
        filled: list[int | None] = []
        for p in pages:
            filled.append(p if p is not None else (filled[-1] if filled else None))
        first_known = next((p for p in filled if p is not None), 1)
        return markdown, [p if p is not None else first_known for p in filled], self._spans
