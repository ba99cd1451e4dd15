"""Markdown as people read it: rendered on the server, then sanitised.

markdown-it-py renders CommonMark plus tables and strikethrough, with raw HTML
turned off (a ``<script>`` in a document is shown as text); nh3 (the Ammonia
sanitiser) then keeps only the tags and attributes listed here and only
``http``, ``https`` and ``mailto`` links, whatever the renderer let through.

Cited spans and ``[n]`` markers are placed in the source as private-use
characters before rendering and become HTML after sanitising, so the documents'
own text can never produce them. Each marked run of text gets its own
``<mark>``, so a highlight across blocks (a table, a list) never breaks the markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

Range = tuple[int, int]

# private-use code points: a document's own are replaced (U+FFFD) before rendering
OPEN, CLOSE = "\ue000", "\ue001"
TOKEN_START, TOKEN_END = "\ue002", "\ue003"
_PRIVATE = re.compile("[\ue000-\ue003]")
_TOKEN = re.compile(f"{TOKEN_START}(\\d+){TOKEN_END}")
_PIECES = re.compile(f"(<[^>]*>|{OPEN}|{CLOSE})")
_ENCODED = re.compile(r"%EE%80%8[0-3]", re.IGNORECASE)  # a sentinel inside a link address

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
    "em", "strong", "s", "del", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th",
    "td", "a",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}
URL_SCHEMES = {"http", "https", "mailto"}
_ALIGN = re.compile(r"^text-align:(left|right|center)$")


def link_allowed(href: str) -> bool:
    """Whether a page may link to ``href``: a web or mail address, nothing else (no
    ``javascript:``, ``data:``, ``file:`` nor a path on this site)."""
    scheme, colon, _ = href.strip().partition(":")
    return bool(colon) and scheme.lower() in URL_SCHEMES


_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_renderer.enable(["table", "strikethrough"])


def _image_as_text(renderer: object, tokens: list, index: int, options: object, env: object) -> str:
    """A document's image is shown as its description: the address is the
    original file's, which the site does not serve, and no page may fetch it."""
    alt = "".join(child.content for child in tokens[index].children or [])
    return escape(f"[image: {alt}]" if alt else "[image]")


_renderer.add_render_rule("image", _image_as_text)
# every link is parsed, so one whose address may not be followed shows its words
# (not its syntax); _link_open and _link_close then leave its markup out
_renderer.validateLink = lambda url: True  # type: ignore[method-assign]


def _link_open(renderer: Any, tokens: list, index: int, options: object, env: object) -> str:
    if link_allowed(str(tokens[index].attrGet("href") or "")):
        return str(renderer.renderToken(tokens, index, options, env))
    close = next(t for t in tokens[index:] if t.type == "link_close")  # links never nest
    close.meta = {**(close.meta or {}), "dropped": True}
    return ""


def _link_close(renderer: Any, tokens: list, index: int, options: object, env: object) -> str:
    if (tokens[index].meta or {}).get("dropped"):
        return ""
    return str(renderer.renderToken(tokens, index, options, env))


_renderer.add_render_rule("link_open", _link_open)
_renderer.add_render_rule("link_close", _link_close)

# a document's headings sit under the page's own (h1 page, h2 panel, h3 part): they
# start at h4, so the page's outline stays the page's
HEADING_OFFSET = 3


def _heading(renderer: Any, tokens: list, index: int, options: object, env: object) -> str:
    token = tokens[index]
    token.tag = f"h{min(6, int(token.tag[1]) + HEADING_OFFSET)}"
    return str(renderer.renderToken(tokens, index, options, env))


_renderer.add_render_rule("heading_open", _heading)
_renderer.add_render_rule("heading_close", _heading)


def _attribute(tag: str, name: str, value: str) -> str | None:
    """A table cell keeps only its alignment."""
    if name == "style":
        return value if _ALIGN.match(value.replace(" ", "")) else None
    return value


def sanitised(html: str) -> str:
    """``html`` with only the allowed tags, attributes and link schemes."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        attribute_filter=_attribute,
        strip_comments=True,
    )


def _balanced_marks(html: str) -> str:
    """Sentinels to ``<mark>`` elements around each marked run of text, so a mark
    never straddles a tag nor sits where text may not (between table rows)."""
    out, inside = [], False
    for piece in _PIECES.split(html):
        if piece in (OPEN, CLOSE):
            inside = piece == OPEN
        elif inside and piece.strip() and not piece.startswith("<"):
            out += ["<mark>", piece, "</mark>"]
        else:
            out.append(piece)
    return "".join(out)


@dataclass(frozen=True)
class Replacement:
    """``text[start:end]`` shown as ``html`` (made by the caller, e.g. an ``[n]`` link)."""

    start: int
    end: int
    html: str


# what opens a line's block (heading, list item, quote, table cell): a highlight
# starts after it, or the line would no longer be that block
_BLOCK_START = re.compile(
    r"(?:[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d{1,9}[.)][ \t]+|>[ \t]?|\|[ \t]*))*"
)
# lines a sentinel must not touch: a table's delimiter row, a code fence
_DELIMITER_CELL = r"[ \t]*:?-+:?[ \t]*"
_SYNTAX_LINE = re.compile(
    rf"^[ \t]*(?:\|?{_DELIMITER_CELL}(?:\|{_DELIMITER_CELL})*\|?|`{{3,}}.*|~{{3,}}.*)[ \t]*$"
)
_ROW_END = re.compile(r"[ \t]*\|[ \t]*$")


def _line_at(text: str, at: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return start, len(text) if end < 0 else end


def _open_at(text: str, at: int) -> int:
    """Where a highlight starting at ``at`` may open without breaking a block."""
    for _ in range(3):
        start, end = _line_at(text, at)
        if _SYNTAX_LINE.match(text[start:end]):
            at = min(end + 1, len(text))
            continue
        if not text[start:at].strip(" \t#>|-*+.)0123456789"):
            opening = _BLOCK_START.match(text, start, end)
            assert opening is not None  # the pattern matches the empty string too
            at = max(at, opening.end())
        return at
    return at


def _close_at(text: str, at: int) -> int:
    """Where a highlight ending at ``at`` may close: not after a row's last pipe."""
    for _ in range(3):
        start, end = _line_at(text, at)
        if at == start and at > 0:
            at -= 1  # the end of the line before
            continue
        if _SYNTAX_LINE.match(text[start:end]):
            at = max(start - 1, 0)
            continue
        trailing = _ROW_END.search(text, start, at)
        if trailing and trailing.end() == at and "|" in text[start : trailing.start()]:
            at = trailing.start()
        return at
    return at


def _with_sentinels(
    text: str, ranges: Iterable[Range], base: int, replacements: Sequence[Replacement]
) -> str:
    """``text`` with a sentinel at each range's start and end and each replaced span
    turned into a numbered token (offsets are ``text``'s own)."""
    end_of_text = base + len(text)
    events: list[tuple[int, int, str]] = []
    for a, b in ranges:
        if a < end_of_text and b > base and b > a:
            first = _open_at(text, max(a, base) - base)
            last = _close_at(text, min(b, end_of_text) - base)
            if last > first:
                events += [(first, 1, OPEN), (last, 0, CLOSE)]
    for index, replacement in enumerate(replacements):
        events.append((replacement.start, 2, token(index, replacement.end)))
    parts, cursor = [], 0
    for at, _, what in sorted(events):
        if at < cursor:
            at = cursor
        parts.append(text[cursor:at])
        if what.startswith(TOKEN_START):
            parts.append(what[: what.index(TOKEN_END) + 1])
            cursor = max(cursor, int(what[what.index(TOKEN_END) + 1 :]))
        else:
            parts.append(what)
            cursor = at
    parts.append(text[cursor:])
    return "".join(parts)


def markdown_html(
    text: str,
    ranges: Iterable[Range] = (),
    *,
    base: int = 0,
    replacements: Sequence[Replacement] = (),
) -> SafeString:
    """``text`` rendered and sanitised, with ``<mark>`` around ``ranges`` (offsets
    from ``base``, the offset of ``text[0]``) and ``replacements`` put in place."""
    clean = _PRIVATE.sub("\ufffd", text)  # same length: the offsets still hold
    source = _with_sentinels(clean, ranges, base, replacements)
    html = _ENCODED.sub("", sanitised(_renderer.render(source)))
    html = _balanced_marks(html)
    html = _TOKEN.sub(lambda m: replacements[int(m.group(1))].html, html)
    return mark_safe(html)  # noqa: S308 - sanitised by nh3; marks and tokens are ours


def token(index: int, end: int) -> str:
    """A replacement's sentinel, carrying where its span ends (stripped when placed)."""
    return f"{TOKEN_START}{index}{TOKEN_END}{end}"


# Inline Markdown: a quoted sentence inside an answer or a table of claims is one
# run of text, so only what stands within a line is rendered (links, emphasis, code,
# escapes); a block's syntax ("# ", "- ", a table's pipes) is the caller's to read.
_inline = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_inline.enable(["strikethrough"])
_inline.add_render_rule("image", _image_as_text)
# as for blocks, every link is parsed; _inline_children drops those not allowed
_inline.validateLink = lambda url: True  # type: ignore[method-assign]


def _inline_children(text: str) -> list:
    """The inline tokens of ``text``, without the links a page may not follow."""
    children, dropping = [], False
    for block in _inline.parseInline(text):
        for child in block.children or []:
            if child.type == "link_open" and not link_allowed(str(child.attrGet("href") or "")):
                dropping = True
            elif child.type == "link_close" and dropping:
                dropping = False
            else:
                children.append(child)
    return children


def inline_html(text: str) -> SafeString:
    """``text`` rendered as one line of Markdown and sanitised: links (web and mail
    addresses only; others show their text), emphasis, code, escapes removed."""
    clean = _PRIVATE.sub("\ufffd", text)
    block = _inline.parseInline(clean)[0] if clean else None
    if block is None:
        return mark_safe("")
    block.children = _inline_children(clean)
    html = _inline.renderer.render([block], _inline.options, {})
    return mark_safe(sanitised(html))  # noqa: S308 - sanitised by nh3


def inline_text(text: str, *, addresses: bool = False) -> str:
    """``text`` read as one line of Markdown, as plain text: a link is its words
    (``addresses``: followed by its address in parentheses), emphasis and escapes
    are gone, code keeps its characters, an image is ``[image: description]``."""
    parts: list[str] = []
    link: tuple[int, str] | None = None  # where the open link's words start, its address
    for child in _inline_children(_PRIVATE.sub("\ufffd", text)):
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" " if child.type == "softbreak" else "\n")
        elif child.type == "image":
            alt = "".join(c.content for c in child.children or [])
            parts.append(f"[image: {alt}]" if alt else "[image]")
        elif child.type == "link_open":
            link = (len(parts), str(child.attrGet("href") or ""))
        elif child.type == "link_close" and link is not None:
            words = "".join(parts[link[0] :])
            if addresses and link[1] not in (words, f"mailto:{words}"):
                parts.append(f" ({link[1]})")
            link = None
    return "".join(parts)
