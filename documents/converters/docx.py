"""DOCX to Markdown: headings, lists, tables, text boxes, and the page of each line.

The body XML is walked in document order by local element names, so
paragraphs and tables stay interleaved and ISO "Strict" files (another
namespace, which python-docx cannot open) convert too. Pages follow Word's
own ``w:lastRenderedPageBreak`` marks when the file has them, else explicit
page breaks. Footnotes, endnotes and reviewer comments live in other parts:
``_docx_notes`` writes them after the body, each on the page of its reference.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field

from lxml import etree

from documents.converters._docx_notes import NoteReferences, notes_write
from documents.converters._docx_numbering import BULLET, Numbering
from documents.converters._mdbuild import (
    MarkdownBuilder,
    clean_inline,
    escape_line_start,
    markdown_image,
    markdown_link_lines,
    table_lines,
)
from documents.converters._omml import equation_markdown, is_math
from documents.converters._ooxml import attribute as _attr
from documents.converters._ooxml import local_name as _local
from documents.converters.base import Conversion, ConversionError, ProgressReport
from documents.converters.zipguard import check_zip, declarations_refuse

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
_HEADING = re.compile(r"^(?:heading|berschrift|titre)\s*(\d)$", re.I)


MERGED_COPY_BUDGET = 20_000  # characters of merged-cell text copied per table


def _grid_count(props: etree._Element | None, name: str, *, default: int) -> int:
    """A row's or cell's ``gridBefore``/``gridSpan`` (grid columns), bounded for hostile files."""
    value = _attr(_child(props, name), "val") if props is not None else None
    return int(value) if value and value.isdigit() and 1 <= int(value) < 64 else default


def _heading_number(numbered: tuple[int, str] | None) -> str | None:
    """A heading's own number ("2.1 "), not a bullet."""
    if numbered is None or not numbered[1] or numbered[1] == BULLET:
        return None
    return numbered[1]


def _child(el: etree._Element, name: str) -> etree._Element | None:
    for c in el:
        if _local(c) == name:
            return c
    return None


def _style_name(styles: dict[str, str], p: etree._Element) -> str:
    """The name of a paragraph's style ("Heading 1", "Title"), or its id."""
    ppr = _child(p, "pPr")
    style_id = _attr(_child(ppr, "pStyle"), "val") if ppr is not None else None
    return styles.get(style_id or "", style_id or "").strip()


@dataclass
class _Para:
    """One paragraph: text per page, style facts, and text boxes found inside it."""

    segments: list[tuple[int, str]] = field(default_factory=list)
    boxes: list[etree._Element] = field(default_factory=list)


class _Walker:
    def __init__(
        self,
        styles: dict[str, str],
        rendered: bool,
        titled: bool,
        numbering: Numbering,
        links: dict[str, str],
    ) -> None:
        self.styles = styles
        self.numbering = numbering
        self.links = links
        self.rendered = rendered  # trust Word's rendered breaks over explicit ones
        # a document with a Title paragraph has its headings below it, as Word's
        # navigation pane and docling show them: Heading 1 becomes "##"
        self.heading_shift = 1 if titled else 0
        self.page = 1
        self.md = MarkdownBuilder()
        self.tables = 0
        self.notes = NoteReferences()

    # -- page-aware text of one paragraph -------------------------------------------------
    def _collect(self, el: etree._Element, para: _Para) -> None:
        for c in el:
            name = _local(c)
            if not self._inline(c, name, para) and not self._attached(c, name, para):
                self._collect(c, para)

    def _inline(self, c: etree._Element, name: str, para: _Para) -> bool:
        """Text, equations, tabs and breaks; False for any other element."""
        if name == "t":
            self._text(para, c.text or "")
            self.notes.anchor_text(c.text or "", self.page)
        elif name in ("oMath", "oMathPara") and is_math(c):  # its layout as marks
            equation = equation_markdown(c)
            self._text(para, equation)
            self.notes.anchor_text(equation, self.page)
        elif name == "tab":
            self._text(para, " ")
        elif name == "br" and _attr(c, "type") == "page":
            if self.rendered:
                self._text(para, " ")  # Word's rendered breaks say where pages end
            else:
                self._break(para)
        elif name in ("br", "cr"):  # a line break inside the paragraph: a line of its own
            para.segments.append((self.page, ""))
        elif name == "lastRenderedPageBreak" and self.rendered:
            self._break(para)
        else:
            return False
        return True

    def _attached(self, c: etree._Element, name: str, para: _Para) -> bool:
        """Notes, comments, links, text boxes, alt text, and what is no text; False for
        any other element."""
        if name in ("footnoteReference", "endnoteReference"):
            label = self.notes.note(name.removesuffix("Reference"), _attr(c, "id"), self.page)
            if label:
                self._text(para, f"[^{label}]")
        elif name == "commentReference":
            self.notes.comment(_attr(c, "id"), self.page)
        elif name in ("commentRangeStart", "commentRangeEnd"):
            self._comment_range(c)
        elif name == "hyperlink" and self.links.get(_attr(c, "id") or ""):
            self._link(c, para, self.links[_attr(c, "id") or ""])
        elif name == "txbxContent":
            para.boxes.append(c)
        elif name in ("Fallback", "del", "instrText", "delInstrText", "pPr", "rPr"):
            pass  # duplicate VML copy, deleted text, field codes, properties
        elif name == "docPr":
            alt = (_attr(c, "descr") or "").strip()
            if alt:
                self._text(para, f" {markdown_image(alt, _attr(c, 'name') or '')} ")
        else:
            return False
        return True

    def _link(self, link: etree._Element, para: _Para, url: str) -> None:
        """The link's text as ``[text](url)``; a rendered page break inside it puts
        its text on two lines, one link over both (``markdown_link_lines``)."""
        segments = para.segments
        start = len(segments) - (1 if segments and segments[-1][0] == self.page else 0)
        before = len(segments[start][1]) if start < len(segments) else 0
        self._collect(link, para)
        pieces = [text for _page, text in segments[start:]]
        if not pieces:
            return
        pieces[0] = pieces[0][before:]
        for k, text in enumerate(markdown_link_lines(pieces, url)):
            page, old = segments[start + k]
            segments[start + k] = (page, (old[:before] if k == 0 else "") + text)

    def _comment_range(self, mark: etree._Element) -> None:
        if _local(mark) == "commentRangeStart":
            self.notes.anchor_start(_attr(mark, "id"))
        else:
            self.notes.anchor_end(_attr(mark, "id"))

    def _text(self, para: _Para, text: str) -> None:
        if para.segments and para.segments[-1][0] == self.page:
            para.segments[-1] = (self.page, para.segments[-1][1] + text)
        else:
            para.segments.append((self.page, text))

    def _break(self, para: _Para) -> None:
        self.page += 1
        para.segments.append((self.page, ""))

    # -- blocks ----------------------------------------------------------------------------
    def _style(self, p: etree._Element) -> tuple[int, str | None]:
        """(heading level or 0, list marker or None) from style, outline level and
        numbering; a numbered heading's marker is its number ("2.1 ")."""
        ppr = _child(p, "pPr")
        name = _style_name(self.styles, p)
        style_id = (_attr(_child(ppr, "pStyle"), "val") if ppr is not None else None) or ""
        numbered = self.numbering.marker(ppr, style_id)  # counted in document order
        match = _HEADING.match(name)
        if match:
            level = max(1, min(6, int(match.group(1)) + self.heading_shift))
            return level, _heading_number(numbered)
        if name.lower() == "title":
            return 1, None
        outline = _attr(_child(ppr, "outlineLvl"), "val") if ppr is not None else None
        if outline is not None and outline.isdigit() and int(outline) < 6:
            return min(6, int(outline) + 1 + self.heading_shift), _heading_number(numbered)
        if numbered is not None:
            depth, marker = numbered
            return 0, ("  " * depth + marker) if marker else None
        # no definitions to count by (a list Word would number from its styles alone):
        # a list style's name says numbers or bullets; numId 0 takes numbering away
        num = _child(ppr, "numPr") if ppr is not None else None
        if num is not None and _attr(_child(num, "numId"), "val") == "0":
            return 0, None
        if num is not None or "list" in name.lower():
            ilvl = _attr(_child(num, "ilvl"), "val") if num is not None else "0"
            indent = "  " * (int(ilvl) if ilvl and ilvl.isdigit() else 0)
            return 0, indent + ("1. " if "number" in name.lower() else "- ")
        return 0, None

    def paragraph(self, p: etree._Element) -> None:
        ppr = _child(p, "pPr")
        if (
            not self.rendered
            and ppr is not None
            and _child(ppr, "pageBreakBefore") is not None
            and _attr(_child(ppr, "pageBreakBefore"), "val") not in ("0", "false")
            and not self.md.empty
        ):
            self.page += 1
        para = _Para()
        start_page = self.page
        self._collect(p, para)
        self.notes.anchor_text(" ", self.page)  # an anchor across paragraphs reads apart
        level, marker = self._style(p)
        segments = [(page, clean_inline(text)) for page, text in para.segments]
        segments = [(page, text) for page, text in segments if text]
        if level and segments:
            heading = (marker or "") + " ".join(t for _p, t in segments)
            self.md.heading(level, heading, segments[0][0])
        elif segments:
            self.md.blank(start_page)
            for i, (page, text) in enumerate(segments):
                line = (marker + text) if (marker and i == 0) else escape_line_start(text)
                self.md.line(line, page)
            self.md.blank(self.page)
        for box in para.boxes:
            self.container(box)

    def table(self, tbl: etree._Element) -> None:
        """A Markdown table; a merged cell's text fills every grid cell it covers
        (Markdown has no spans), so each row reads whole on its own. The copies are
        bounded per table (``MERGED_COPY_BUDGET`` characters): beyond it, covered
        cells stay empty, so a small hostile file cannot multiply its text."""
        rows: list[list[str]] = []
        start_page = self.page
        above: dict[int, str] = {}  # grid column -> text of the cell last seen there
        budget = MERGED_COPY_BUDGET
        for tr in (c for c in tbl if _local(c) == "tr"):
            # a row starting late leaves its first grid columns empty
            cells = [""] * _grid_count(_child(tr, "trPr"), "gridBefore", default=0)
            for column in range(len(cells)):
                above[column] = ""
            for element in (c for c in tr if _local(c) in ("tc", "sdt")):
                # a cell inside a content control keeps its properties on the inner w:tc
                tc = next((d for d in element.iter() if _local(d) == "tc"), element)
                texts: list[str] = []
                for p in element.iter():
                    if _local(p) == "p":
                        para = _Para()
                        self._collect(p, para)
                        texts.extend(t for _pg, t in para.segments)
                text = clean_inline(" ".join(texts))
                props = _child(tc, "tcPr")
                width = _grid_count(props, "gridSpan", default=1)
                merge = _child(props, "vMerge") if props is not None else None
                columns = range(len(cells), len(cells) + width)
                continues = merge is not None and _attr(merge, "val") != "restart" and not text
                # a continuation repeats the text above its first column (Word keeps the
                # spans of a vertical merge equal)
                values = [above.get(columns[0], "") if continues else text] * width
                for column, value in zip(columns, values, strict=True):
                    above[column] = value
                for i, value in enumerate(values):
                    if (continues or i > 0) and value:  # a copy: paid from the budget
                        if len(value) > budget:
                            value = ""
                        else:
                            budget -= len(value)
                    cells.append(value)
            for column in [c for c in above if c >= len(cells)]:
                above[column] = ""  # a short row ends every span below its last cell
            if cells:
                rows.append(cells)
        lines = table_lines(rows)
        if lines:
            self.tables += 1
            self.md.blank(start_page)
            for line in lines:
                self.md.line(line, start_page)
            self.md.blank(self.page)

    def container(self, el: etree._Element) -> None:
        for c in el:
            name = _local(c)
            if name == "p":
                self.paragraph(c)
            elif name == "tbl":
                self.table(c)
            elif name in ("sdt", "sdtContent", "customXml", "ins", "smartTag"):
                self.container(c)
            elif name in ("commentRangeStart", "commentRangeEnd"):
                self._comment_range(c)  # a comment may span paragraphs


def _xml(archive: zipfile.ZipFile, name: str) -> etree._Element | None:
    try:
        data = archive.read(name)
        declarations_refuse(data, name)
        return etree.fromstring(data, _PARSER)
    except KeyError:
        return None
    except etree.XMLSyntaxError as exc:
        raise ConversionError(
            f"could not read this DOCX: {name} is not well-formed XML ({exc})"
        ) from exc


def _main_part(archive: zipfile.ZipFile) -> str:
    rels = _xml(archive, "_rels/.rels")
    for rel in rels if rels is not None else []:
        if (_attr(rel, "Type") or "").endswith("/officeDocument") and _attr(
            rel, "TargetMode"
        ) != "External":
            return (_attr(rel, "Target") or "word/document.xml").lstrip("/")
    return "word/document.xml"


def _links(archive: zipfile.ZipFile, main: str) -> dict[str, str]:
    """The main part's external hyperlink targets by relationship id (never fetched)."""
    folder, name = main.rsplit("/", 1) if "/" in main else ("", main)
    rels = _xml(archive, f"{folder}/_rels/{name}.rels".lstrip("/"))
    return {
        _attr(rel, "Id") or "": _attr(rel, "Target") or ""
        for rel in (rels if rels is not None else [])
        if (_attr(rel, "Type") or "").endswith("/hyperlink")
        and _attr(rel, "TargetMode") == "External"
    }


def _styles(archive: zipfile.ZipFile, main: str) -> dict[str, str]:
    root = _xml(archive, main.rsplit("/", 1)[0] + "/styles.xml")
    styles: dict[str, str] = {}
    for style in root.iter() if root is not None else []:
        if _local(style) == "style":
            name = _child(style, "name")
            styles[_attr(style, "styleId") or ""] = _attr(name, "val") or ""
    return styles


def _core(archive: zipfile.ZipFile) -> dict[str, object]:
    root = _xml(archive, "docProps/core.xml")
    meta: dict[str, object] = {}
    for el in root if root is not None else []:
        if (
            _local(el) in ("title", "creator", "subject", "lastModifiedBy")
            and (el.text or "").strip()
        ):
            meta["author" if _local(el) == "creator" else _local(el)] = el.text.strip()
    return meta


class DocxConverter:
    """DOCX to Markdown; hostile archives are refused by ``zipguard`` before parsing."""

    name = "docx-markdown"
    # raised whenever the Markdown it writes changes, so `reconvert` finds the files an
    # older version made; what each version changed: docs/conversion.md, "Changes"
    version = "1.4.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        check_zip(data)
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            main = _main_part(archive)
            root = _xml(archive, main)
        except ConversionError:
            raise
        except Exception as exc:
            raise ConversionError(f"could not read this DOCX: {exc}") from exc
        body = (
            next((el for el in root.iter() if _local(el) == "body"), None)
            if root is not None
            else None
        )
        if body is None:
            raise ConversionError("could not read this DOCX: it has no document body")
        rendered = any(_local(el) == "lastRenderedPageBreak" for el in body.iter())
        styles = _styles(archive, main)
        titled = any(
            _local(p) == "p" and _style_name(styles, p).lower() == "title" for p in body.iter()
        )
        folder = main.rsplit("/", 1)[0]
        numbering = Numbering(
            _xml(archive, f"{folder}/numbering.xml"), _xml(archive, f"{folder}/styles.xml")
        )
        walker = _Walker(styles, rendered, titled, numbering, _links(archive, main))
        walker.container(body)
        notes = notes_write(
            walker.md, walker.notes, archive, main, lambda name: _xml(archive, name)
        )
        markdown, line_pages, _spans = walker.md.build(paged=True)
        meta = _core(archive)
        meta.update(
            page_breaks_from="rendered" if rendered else "explicit", tables=walker.tables, **notes
        )
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=line_pages,
            page_count=walker.page,
            metadata=meta,
        )
