"""PDF to Markdown with PyMuPDF: headings, lists, tables and a box for every line.

One ``get_text("dict")`` pass per page, then plain geometry, no ML. The
converter runs five passes over typed values:

1. extract (``extract``): a page's spans become ``Line``\\ s in ``Block``\\ s, each
   with its ``Box`` (``geometry``) and the boxes of its parts (``lines``);
2. lines: lines PyMuPDF cut on one row are joined, furniture (running headers,
   footers, page numbers) left out (``furniture``);
3. blocks (``blocks``): ruled (``ruled``) and borderless (``aligned``) tables
   and label/value forms (``forms``) take their place, lone list markers join
   their text, blocks are put in reading order;
4. groups (``groups``, ``headings``): lines become headings, list items,
   paragraphs, listings and tables, joined again where a paragraph was cut;
5. Markdown (``markdown``, ``cells``): each group written, every span with the
   PDF box it came from, annotation notes (``annotations``) at the end.

Headings come from the outline when it matches the pages, otherwise from font
size and weight. Every threshold is named once, with its unit, in
``thresholds``.
"""

from documents.converters.pdf.converter import NO_TEXT_EMPTY, NO_TEXT_IMAGES, PdfConverter

__all__ = ["NO_TEXT_EMPTY", "NO_TEXT_IMAGES", "PdfConverter"]
