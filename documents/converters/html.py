"""HTML to Markdown with BeautifulSoup: headings, paragraphs, lists, tables.

Scripts, styles, templates and page chrome (nav, forms) are dropped; links
keep their text only, so nothing is emitted that a reader could not see.
A ``<br>`` starts a new Markdown line of the same paragraph (addresses, verse),
and ``<pre>`` becomes a fenced block with its lines and spacing as written.
"""

from __future__ import annotations

import re
import unicodedata

from bs4 import BeautifulSoup, Comment, NavigableString, Tag

from documents.converters._mdbuild import (
    MarkdownBuilder,
    clean_inline,
    escape_line_start,
    table_lines,
)
from documents.converters.base import Conversion, ConversionError, ProgressReport

_DROP = {
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "nav",
    "form",
    "button",
    "select",
    "head",
    "meta",
    "link",
}
_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "blockquote",
    "figure",
    "figcaption",
    "address",
    "dl",
    "dt",
    "dd",
    "body",
    "html",
    "center",
    "details",
    "summary",
}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.M)


def _inline_text(el: Tag) -> str:
    parts: list[str] = []
    for node in el.descendants:
        if isinstance(node, Comment):
            continue
        if isinstance(node, NavigableString) and not any(
            p.name in _DROP for p in node.parents if p is not el
        ):
            parts.append(str(node))
        elif isinstance(node, Tag) and node.name == "br":
            parts.append(" ")
    return clean_inline("".join(parts))


def _decode(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


class _Renderer:
    def __init__(self) -> None:
        self.md = MarkdownBuilder()
        self.inline: list[str | None] = []  # None: a <br>

    def flush(self) -> None:
        pieces: list[str] = [""]
        for part in self.inline:
            if part is None:
                pieces.append("")
            else:
                pieces[-1] += part
        lines = [clean_inline(piece) for piece in pieces]
        self.inline.clear()
        lines = [line for line in lines if line]
        if lines:
            self.md.blank()
            for line in lines:
                self.md.line(escape_line_start(line))
            self.md.blank()

    def preformatted(self, el: Tag) -> None:
        """A fenced block: the text's lines and spacing as written (HTML drops one
        newline right after ``<pre>``), control characters as spaces."""
        text = el.get_text().replace("\r\n", "\n").replace("\r", "\n").removeprefix("\n")
        text = "".join(
            " " if unicodedata.category(ch) == "Cc" and ch not in "\n\t" else ch for ch in text
        )
        lines = text.rstrip("\n").split("\n")
        if not any(line.strip() for line in lines):
            return
        longest = max((len(m.group(1)) for m in _FENCE.finditer(text)), default=0)
        fence = "`" * max(3, longest + 1)  # longer than any fence inside the text
        self.md.blank()
        self.md.line(fence)
        for line in lines:
            self.md.line(line.rstrip())
        self.md.line(fence)
        self.md.blank()

    def walk(self, el: Tag) -> None:
        for node in el.children:
            if isinstance(node, Comment):
                continue
            if isinstance(node, NavigableString):
                self.inline.append(str(node))
                continue
            if not isinstance(node, Tag) or node.name in _DROP:
                continue
            if node.name in _HEADINGS:
                self.flush()
                self.md.heading(_HEADINGS[node.name], _inline_text(node))
            elif node.name in ("ul", "ol"):
                self.flush()
                self.list(node, 0)
            elif node.name == "table":
                self.flush()
                self.table(node)
            elif node.name == "br":
                self.inline.append(None)
            elif node.name == "pre":
                self.flush()
                self.preformatted(node)
            elif node.name == "hr":
                self.flush()
            elif node.name in _BLOCKS:
                self.flush()
                self.walk(node)
                self.flush()
            else:
                self.walk(node)  # inline element: keep its text in the running paragraph

    def list(self, el: Tag, depth: int) -> None:
        ordered = el.name == "ol"
        self.md.blank()
        for number, li in enumerate(el.find_all("li", recursive=False), start=1):
            nested = [c for c in li.find_all(["ul", "ol"], recursive=False)]
            for c in nested:
                c.extract()
            text = _inline_text(li)
            if text:
                self.md.line("  " * depth + (f"{number}. " if ordered else "- ") + text)
            for c in nested:
                self.list(c, depth + 1)
        self.md.blank()

    def table(self, el: Tag) -> None:
        rows = []
        for tr in el.find_all("tr"):
            if tr.find_parent("table") is not el:
                continue  # nested tables are flattened into their cell's text
            cells = [_inline_text(c) for c in tr.find_all(["th", "td"], recursive=False)]
            if cells:
                rows.append(cells)
        self.md.blank()
        for line in table_lines(rows):
            self.md.line(line)
        self.md.blank()


class HtmlConverter:
    """HTML to Markdown; raises ``ConversionError`` for files without readable text."""

    name = "html-markdown"
    # raised whenever the Markdown it writes changes, so `reconvert` finds the files an
    # older version made; what each version changed: docs/conversion.md, "Changes"
    version = "1.2.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        try:
            soup = BeautifulSoup(_decode(data), "lxml")
        except Exception as exc:
            raise ConversionError(f"could not read this HTML: {exc}") from exc
        title = clean_inline(soup.title.get_text()) if soup.title else ""
        renderer = _Renderer()
        try:
            renderer.walk(soup.body or soup)
            renderer.flush()
        except RecursionError as exc:
            raise ConversionError(
                "could not read this HTML: elements are nested too deeply"
            ) from exc
        markdown, _pages, _spans = renderer.md.build(paged=False)
        if not markdown.strip():
            raise ConversionError("this HTML page has no readable text")
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=[],
            metadata={"title": title} if title else {},
        )
