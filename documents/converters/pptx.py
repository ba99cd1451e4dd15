"""PPTX to Markdown: one ``# Slide n: title`` section per slide (``# Slide n
(hidden): title`` for a slide the show skips), notes and reviewer comments included.

Shapes are read top-to-bottom, left-to-right (groups recursed), tables become
Markdown tables, charts contribute their title and categories/values, and
pictures their alt text. Paragraphs of a text frame stay separate Markdown
paragraphs; bulleted ones (their own bullet, or the one a content placeholder
inherits from the slide master) become list items. A line break inside a
paragraph (``<a:br/>``) reads as a space. Speaker notes go under ``### Notes``,
reviewer comments under ``### Comments``. Every line of a slide's section
carries the slide number as its page. A broken shape is skipped, never fatal.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from documents.converters._mdbuild import (
    MarkdownBuilder,
    clean_inline,
    escape_line_start,
    markdown_image,
    markdown_link,
    table_lines,
)
from documents.converters._pptx_comments import (
    SlideComment,
    comment_authors,
    slide_comments,
)
from documents.converters.base import Conversion, ConversionError, ProgressReport
from documents.converters.zipguard import check_zip

if TYPE_CHECKING:
    from lxml.etree import _Element
    from pptx.chart.chart import Chart
    from pptx.table import Table
    from pptx.text.text import TextFrame, _Paragraph

log = logging.getLogger(__name__)
_TITLES = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE)
# content placeholders: their paragraphs inherit the master's bullets unless told otherwise
_BULLETED = (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY)
# python-pptx's shape classes share no base declaring what is read here (text_frame,
# table, chart, shapes, image…): a shape is read by duck typing, every access guarded
Shape = Any


def _is_title(shape: Shape) -> bool:
    try:
        return shape.is_placeholder and shape.placeholder_format.type in _TITLES
    except Exception:
        return False


def _position(shape: Shape) -> tuple[int, int]:
    try:
        return (shape.top or 0, shape.left or 0)
    except Exception:
        return (0, 0)


def _plain(text: str) -> str:
    """python-pptx reads a line break (``<a:br/>``) as a vertical tab: a space here."""
    return clean_inline(text.replace("\v", " "))


def _bullet_of(element: _Element | None) -> bool | None:
    """True for ``a:buChar``/``a:buAutoNum``, False for ``a:buNone``, None if not set."""
    if element is None:
        return None
    for child in element:
        if not isinstance(child.tag, str):
            continue
        if child.tag.endswith(("}buChar", "}buAutoNum")):
            return True
        if child.tag.endswith("}buNone"):
            return False
    return None


def _first_level_bullet(element: _Element) -> bool | None:
    """The bullet setting of the first ``a:lvl1pPr`` under ``element`` (a list style)."""
    for level in element.iter():
        if isinstance(level.tag, str) and level.tag.endswith("}lvl1pPr"):
            return _bullet_of(level)
    return None


def _inherits_bullets(shape: Shape) -> bool:
    """A content placeholder whose own list style, or else its layout's, does not
    turn the master's bullets off."""
    try:
        if not shape.is_placeholder or shape.placeholder_format.type not in _BULLETED:
            return False
        own = _first_level_bullet(shape.text_frame._txBody)
        if own is not None:
            return own
        layout = shape.part.slide.slide_layout.placeholders.get(shape.placeholder_format.idx)
        inherited = _first_level_bullet(layout._element) if layout is not None else None
        return inherited is not False
    except Exception:  # an unusual placeholder: its paragraphs stay plain
        return False


def _linked_text(paragraph: _Paragraph) -> str:
    """The paragraph's text with each hyperlinked run as ``[text](address)``; the
    runs are found in order in the paragraph's text, which also holds line breaks
    and fields that are no runs."""
    text = paragraph.text
    out, cursor = [], 0
    for run in paragraph.runs:
        try:
            address = run.hyperlink.address
        except Exception:  # a link whose relationship is missing: its text stays
            address = None
        at = text.find(run.text, cursor) if run.text else -1
        if not address or at < 0:
            continue
        out += [text[cursor:at], markdown_link(run.text, address)]
        cursor = at + len(run.text)
    return "".join(out) + text[cursor:]


def _text_frame(
    md: MarkdownBuilder, frame: TextFrame, slide_no: int, *, bulleted: bool = False
) -> None:
    previous_was_item = False
    for paragraph in frame.paragraphs:
        text = _plain(_linked_text(paragraph))
        if not text:
            continue
        level = paragraph.level or 0
        own = _bullet_of(paragraph._p.pPr)
        is_item = own if own is not None else (bulleted or level > 0)
        if is_item:
            if not previous_was_item:
                md.blank(slide_no)
            md.line("  " * level + "- " + text, slide_no)
        else:
            md.blank(slide_no)  # separate paragraphs, as on the slide
            md.line(escape_line_start(text), slide_no)
        previous_was_item = is_item
    md.blank(slide_no)


def _comments(md: MarkdownBuilder, comments: list[SlideComment], slide_no: int) -> None:
    md.heading(3, "Comments", slide_no)
    for comment in comments:
        text = clean_inline(comment.text)
        if not text:
            continue
        when = clean_inline(comment.when)
        who = clean_inline(comment.author) + (f", {when}" if when else "")
        prefix = "  - Reply by " if comment.is_reply else "- "
        md.line(f"{prefix}{who}: {text}", slide_no)
    md.blank(slide_no)


def _table(md: MarkdownBuilder, table: Table, slide_no: int) -> None:
    rows = [[cell.text for cell in row.cells] for row in table.rows]
    for line in table_lines(rows):
        md.line(line, slide_no)
    md.blank(slide_no)


def _chart(md: MarkdownBuilder, chart: Chart, slide_no: int) -> None:
    if chart.has_title and chart.chart_title.has_text_frame:
        title = clean_inline(chart.chart_title.text_frame.text)
        if title:
            md.line(f"Chart: {title}", slide_no)
    try:
        plot = chart.plots[0]
        categories = [str(c) for c in plot.categories]
        rows = [["", *categories]] + [
            [s.name, *("" if v is None else f"{v:g}" for v in s.values)] for s in plot.series
        ]
        if categories:
            md.blank(slide_no)
            for line in table_lines(rows):
                md.line(line, slide_no)
    except Exception:  # charts without readable data still keep their title
        log.debug("chart data unreadable on slide %s", slide_no, exc_info=True)
    md.blank(slide_no)


def _picture(md: MarkdownBuilder, shape: Shape, slide_no: int) -> None:
    element = shape._element
    alt = ""
    for el in element.iter():
        if el.tag.endswith("}cNvPr"):
            alt = clean_inline(el.get("descr") or "")
            break
    if alt:
        extension = ""
        try:
            extension = shape.image.ext
        except Exception:  # missing blip, dangling or external relationship: no image part
            log.debug("picture without a readable image on slide %s", slide_no)
        md.line(markdown_image(alt, shape.name or "", extension), slide_no)
        md.blank(slide_no)


def _shapes(
    md: MarkdownBuilder, shapes: Iterable[Shape], slide_no: int, skip: Shape | None = None
) -> None:
    for shape in sorted(shapes, key=_position):
        if shape is skip or (
            skip is not None and getattr(shape, "shape_id", None) == skip.shape_id
        ):
            continue
        try:
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                _shapes(md, shape.shapes, slide_no)
            elif getattr(shape, "has_table", False) and shape.has_table:
                _table(md, shape.table, slide_no)
            elif getattr(shape, "has_chart", False) and shape.has_chart:
                _chart(md, shape.chart, slide_no)
            elif (
                shape.shape_type == MSO_SHAPE_TYPE.PICTURE or shape.__class__.__name__ == "Picture"
            ):
                _picture(md, shape, slide_no)
            elif shape.has_text_frame:
                _text_frame(md, shape.text_frame, slide_no, bulleted=_inherits_bullets(shape))
        except Exception:  # one malformed shape must not lose the slide
            log.debug("skipped unreadable shape on slide %s", slide_no, exc_info=True)


class PptxConverter:
    """PPTX to Markdown; hostile archives are refused by ``zipguard`` before parsing."""

    name = "pptx-markdown"
    # raised whenever the Markdown it writes changes, so `reconvert` finds the files an
    # older version made; what each version changed: docs/conversion.md, "Changes"
    version = "1.4.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        check_zip(data)
        try:
            prs = Presentation(io.BytesIO(data))
            slides = list(prs.slides)
        except Exception as exc:
            raise ConversionError(f"could not read this PPTX: {exc}") from exc
        md = MarkdownBuilder()
        notes = commented = 0
        comment_parts: set[str] = set()
        try:
            authors = comment_authors(prs.part)
        except ConversionError:
            raise
        except Exception:  # an unreadable author list only loses the names
            log.debug("comment authors unreadable", exc_info=True)
            authors = {}
        for number, slide in enumerate(slides, start=1):
            title_shape = next((s for s in slide.shapes if _is_title(s)), None)
            title = _plain(title_shape.text_frame.text) if title_shape is not None else ""
            # a slide hidden in the slide show is still in the file, and quotable: say so
            label = (
                f"Slide {number} (hidden)"
                if slide.element.get("show") in ("0", "false")
                else f"Slide {number}"
            )
            md.heading(1, f"{label}: {title}" if title else label, number)
            _shapes(md, slide.shapes, number, skip=title_shape if title else None)
            try:
                frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
            except Exception:
                frame = None
            if frame is not None and clean_inline(frame.text):
                notes += 1
                md.heading(3, "Notes", number)
                _text_frame(md, frame, number)
            try:
                comments = slide_comments(slide.part, authors, comment_parts)
                if any(clean_inline(c.text) for c in comments):
                    _comments(md, comments, number)
                    commented += 1
            except ConversionError:
                raise
            except Exception:  # an unreadable comments part must not lose the slide
                log.debug("comments unreadable on slide %s", number, exc_info=True)
        markdown, line_pages, _spans = md.build(paged=True)
        meta: dict[str, object] = {
            "slides": len(slides),
            "slides_with_notes": notes,
            "slides_with_comments": commented,
        }
        try:
            core = prs.core_properties
            meta.update({k: v for k, v in (("title", core.title), ("author", core.author)) if v})
        except Exception:  # unreadable docProps/core.xml only loses metadata
            log.debug("core properties unreadable", exc_info=True)
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=line_pages,
            page_count=len(slides),
            metadata=meta,
        )
