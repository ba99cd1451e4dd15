"""Every threshold of the PDF converter, named once, with its unit.

Units: ``_PT`` PDF points; ``_EM`` multiples of the line's font size; ``_LINES``
multiples of a line's height; ``SHARE`` a fraction (0-1) of what the comment
names; plain counts otherwise. A rule that uses a threshold says why in its own
docstring; the comment here says what the number measures.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageBand:
    """A strip along the top and one along the bottom of a page, each ``share`` of
    its height. The bottom one starts at ``1 - share`` of the height, rounded to
    six decimals (in binary, 1 - 0.07 falls just short of 0.93)."""

    share: float

    def top(self, height: float) -> float:
        """Where the top strip ends, in points from the page's top."""
        return self.share * height

    def bottom(self, height: float) -> float:
        """Where the bottom strip starts, in points from the page's top."""
        return round(1 - self.share, 6) * height


# --- shared tolerances ------------------------------------------------------------
SLACK_PT = 1.0  # glyph boxes this close are at one position (rounding, side bearings)
ALIGN_PT = 2.0  # two lines' edges this close are one edge: the same column, the same margin
MIN_LINE_HEIGHT_PT = 1.0  # a line's height scaling a gap counts as at least this: never 0
MIN_FONT_SIZE_PT = 1.0  # a font size scaling a difference counts as at least this

# --- extract: spans to lines ------------------------------------------------------
FONT_SIZE_DECIMALS = 1  # font sizes compared at 0.1 pt: one size set twice is one size
STYLED_LINE_SHARE = 0.8  # of a line's characters bold (fixed-width): a bold (fixed-width) line
MARKER_GLYPHS = 2  # at most this many meaningless pictograph glyphs are a list marker
MARKER_APART_EM = 0.4  # a marker glyph stands at least this far left of its text
ZERO_WIDTH_PT = 0.01  # a glyph narrower than this is drawn over its neighbour (a ligature)
GLYPH_WIDTH_PT = 0.5  # a glyph wider than this has a width of its own
LIGATURE_JOIN_PT = 0.5  # a ligature's halves meet within this
SAME_ROW_OVERLAP = 0.5  # share of the shorter line's height two lines on one row overlap by
MARKER_TOUCH_EM = 0.25  # two marker glyphs this close are one marker (a box and its tick)
SAME_ROW_SIZE_RATIO = 1.3  # lines on one row whose sizes differ more are a title and small print
SAME_ROW_GAP_EM = 3.0  # ... unless this close: then they are one line in two sizes

# --- blocks: furniture (running headers and footers, page numbers) ----------------
# where running headers and footers lie: blocks wholly inside the top or bottom 11 %
FURNITURE_BAND = PageBand(0.11)
# the margins: a lone number reaching into them is a page number, a footer block
# wholly inside them may hold one
PAGE_MARGIN = PageBand(0.07)
# where "Page 2 of 8" is a page number even with text beyond it: the top or bottom eighth
NAMED_PAGE_NUMBER_BAND = PageBand(0.125)
FURNITURE_ROW_PT = 8.0  # repeated text counts as one header when its top is in one such step
FURNITURE_MIN_PAGES = 2  # text repeated on half the pages, and at least this many, is furniture
PAGE_NUMBER_DIGITS = 4  # a page number has at most this many digits
SPREAD_WIDTH_EM = 20.0  # two facing pages' numbers stand at least this far apart

# --- blocks: reading order --------------------------------------------------------
PROSE_MIN_LINES = 4  # fewer lines on a page (or band) are no prose to find columns in
PROSE_PARAGRAPH_SHARE = 0.6  # of its lines in blocks of two or more lines: prose
GUTTER_EDGE_SHARE = 0.2  # a column gap lies no nearer the text's edges than this share of its width
GUTTER_CROSSING_SHARE = 0.15  # at most this share of the lines may cross a column gap
COLUMN_MIN_SHARE = 0.2  # each side of a column gap holds at least this share of the lines
MAX_COLUMN_DEPTH = 3  # columns inside columns are looked for this many levels deep
MARKER_ROW_LINES = 0.6  # a lone list marker and its text start within this many line heights
MARKER_REACH_PT = 80.0  # ... and the text starts at most this far right of the marker

# --- groups: headings -------------------------------------------------------------
OUTLINE_TRUST_SHARE = 0.5  # of the outline's titles found on their pages: headings from it
HEADING_SIZE_RATIO = 1.15  # of the body's font size: type this large may be a heading
HEADING_BLOCK_LINES = 4  # a heading block has at most this many lines
HEADING_SIZE_MAX_SHARE = 0.3  # a size set in more than this share of the text is body text
FONT_HEADING_LEVELS = 5  # the largest sizes become heading levels 1 to this
MAX_HEADING_LEVEL = 6  # Markdown's deepest heading
HEADING_MAX_CHARS = 150  # a longer line is no heading
BOLD_RARE_SHARE = 0.25  # bold lines are headings only where at most this share of lines is bold
BOLD_HEADING_SIZE_RATIO = 0.95  # of the body's font size: a bold heading is no smaller
BOLD_HEADING_BLOCK_LINES = 2  # a bold heading's block has at most this many lines
BOLD_TITLE_MAX_WORDS = 12  # a bold line with more words is a bold sentence, not a title
DEFAULT_BODY_SIZE_PT = 10.0  # the body size of a document without text

# --- groups: paragraphs, list items, listings -------------------------------------
PARAGRAPH_GAP_LINES = 0.8  # a wider gap between two lines separates their paragraphs
INDENT_EM = 0.8  # a line starting this much right of its block's edge is indented
# a line ending this share of its block's width short of the far edge ends short: a
# paragraph's last line, a ragged line (an address), a row that wraps no further
SHORT_OF_EDGE = 0.15
WRAPPED_EDGE = 0.05  # a line ending within this share of the width of the edge ran to it
HANGING_END_EM = 2.0  # a hanging indent's last line ends at least this short of the edge
SENTENCE_BLOCK_MIN_LINES = 4  # a block set a sentence per line has at least this many lines
SENTENCE_LINES_SHARE = 0.8  # ... this share of them ending a sentence
FULL_LINES_MAX_SHARE = 0.5  # ... and at most this share running to its edge
SAME_SIZE_SHARE = 0.1  # sizes differing by less than this share of one are one type size
LISTING_GAP_LINES = 3.0  # blocks of one listing are at most this many line heights apart
LISTINGS_MAX_SHARE = 0.3  # fixed-width text is code only below this share of all text

# --- Markdown: code listings and table cells --------------------------------------
MIN_CHAR_ADVANCE_PT = 0.1  # a fixed-width character is at least this wide (no division by 0)
MAX_CODE_INDENT = 200  # characters of indent a listing line keeps at most
CELL_BORDER_PT = 0.5  # a word may reach this far past a cell's border and stay in the cell
RAISED_TOLERANCE_PT = 0.5  # a superscript may stand this far outside the word holding it
MIN_WORD_WIDTH_PT = 1e-6  # a word's width in a ratio is at least this: no 0

# --- ruled tables -----------------------------------------------------------------
RULE_TOLERANCE_PT = 3.0  # rules this close are one rule (pdfplumber's snap/join default)
MIN_RULE_PT = 3.0  # shorter strokes are glyph fragments, not rules
THIN_RULE_PT = 2.5  # a filled rectangle this thin is drawn as a rule
MIN_GRID = 2  # rows, and columns, of a ruled table at the least
STRAIGHT_PT = 1.0  # a line whose ends differ by less than this across it is straight

# --- borderless (aligned) tables --------------------------------------------------
MIN_COLUMNS = 3  # cells in a row that can head a table
MIN_BODY_ROWS = 2  # rows under the header a table needs ...
MIN_COLUMNS_OF_ONE_ROW = 4  # ... or, for one row, this many named columns, each filled
OVERPRINT_PT = 2.0  # a line may reach this far into the row above before it is drawn over it
MAX_CELL_CHARS = 60  # a longer run of text is prose, not a cell
CELL_GAP_EM = 0.6  # parts of a line closer than this are one cell
COLUMN_TOLERANCE_PT = 4.0  # a cell may start this far left of its column's start
PITCH_SLACK = 1.6  # a row farther below the previous than this many row pitches ends the table
ROW_GAP_MIN_PT = 4.0  # a row's centre lies at least this far below the row above's
FIRST_ROW_GAP_LINES = 3.0  # before a pitch is known: the first row's gap in header heights
NOTE_SIZE_RATIO = 0.9  # of the row above's size: a note under a row is set smaller
CELL_PAD_PT = 1.0  # a cell's box reaches this far past its text and its column's edges
PROBE_WIDTH_PT = 1.0  # a note's column is the one its first point of text lies under

# --- borderless label/value forms (``forms``) -------------------------------------
MIN_FORM_ROWS = 2  # rows of two cells, labels and values aligned, that make a form
MAX_LABEL_CHARS = 40  # a longer first cell is no label (a sentence beside a figure)

# --- annotations ------------------------------------------------------------------
MAX_ANNOTATIONS = 2_000  # per document: a hostile file may hold millions
MAX_NOTE_CHARS = 2_000  # of one note
ANCHOR_CHARS = 120  # of the marked text quoted beside a markup's note

# --- decoded bytes: what MuPDF decodes to read the text (``budget``) ---------------
# A hostile file compresses a gigabyte into a megabyte; MuPDF holds some streams whole
# (a string token, a font file) and stopped only at the conversion's memory limit.
# Decoded sizes are measured first, in bounded memory, and a file over one of these is
# refused naming it. Images are not counted: text extraction does not decode them.
MIB = 1024 * 1024
# of content streams one page runs (its own, the forms and Type3 glyphs it draws, its
# tiling patterns): a dense page holds ~100 KB, a detailed vector map a few MB; the
# text pass's memory grows with it (~30 bytes per byte of one long string)
MAX_PAGE_CONTENT_BYTES = 16 * MIB
# of one stream held whole (a font file, a colour profile, a CMap): the largest
# embedded fonts (complete CJK faces) are ~20-30 MB
MAX_STREAM_BYTES = 64 * MIB
# of every stream the pages reach, each counted once: the whole document's work
MAX_DOCUMENT_DECODED_BYTES = 512 * MIB
DECODE_CHUNK_BYTES = 1 * MIB  # a decompressed stream is measured this much at a time
