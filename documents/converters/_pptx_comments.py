"""Reviewer comments of a PPTX slide, which python-pptx does not read.

PowerPoint stores them in parts related to the slide: legacy comments
(``ppt/comments/commentN.xml``, authors in ``ppt/commentAuthors.xml``) and,
since 2021, modern threaded comments (``ppt/comments/modernComment_*.xml``,
authors in ``ppt/authors.xml``, replies nested in their comment). Both are read
by local element names, so the namespaces' versions do not matter. The parts
have passed ``zipguard`` (no DTD, no entities) before anything here parses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lxml import etree

from documents.converters._ooxml import local_name as _local
from documents.converters.zipguard import declarations_refuse

if TYPE_CHECKING:
    from pptx.opc.package import Part

_COMMENTS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments",
    "http://schemas.microsoft.com/office/2018/10/relationships/comments",
)
_AUTHORS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/commentAuthors",
    "http://schemas.microsoft.com/office/2018/10/relationships/authors",
)
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


@dataclass(frozen=True)
class SlideComment:
    author: str
    when: str
    text: str
    is_reply: bool = False


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    return [child for child in element if _local(child) == name]


def _related_blobs(
    part: Part, reltypes: tuple[str, ...], seen: set[str] | None = None
) -> list[bytes]:
    """The related parts' bytes, each part once per ``seen`` (several slides may point
    at one comments part); a part declaring a DTD refuses the file, as ``zipguard``
    does for the parts it can recognise by name."""
    blobs = []
    for rel in part.rels.values():
        if rel.reltype not in reltypes or rel.is_external:
            continue
        name = str(rel.target_part.partname)
        if seen is not None:
            if name in seen:
                continue
            seen.add(name)
        blob = rel.target_part.blob
        declarations_refuse(blob, name.lstrip("/"))
        blobs.append(blob)
    return blobs


def comment_authors(presentation_part: Part) -> dict[str, str]:
    """Author id → ``Name (initials)`` from both kinds of author lists."""
    authors: dict[str, str] = {}
    for blob in _related_blobs(presentation_part, _AUTHORS):
        for element in etree.fromstring(blob, _PARSER).iter():
            if _local(element) in ("cmAuthor", "author") and element.get("id") is not None:
                name, initials = element.get("name") or "", element.get("initials") or ""
                authors[element.get("id")] = f"{name} ({initials})" if initials else name
    return authors


def _text(comment: etree._Element) -> str:
    """A legacy ``<p:text>`` or the paragraphs of a modern ``<p188:txBody>``
    (line breaks read as spaces)."""
    legacy = _children(comment, "text")
    if legacy:
        return legacy[0].text or ""
    paragraphs = []
    for body in _children(comment, "txBody"):
        for paragraph in body.iter():
            if _local(paragraph) == "p":
                pieces = [
                    (element.text or "") if _local(element) == "t" else " "
                    for element in paragraph.iter()
                    if _local(element) in ("t", "br")
                ]
                paragraphs.append("".join(pieces))
    return " ".join(paragraphs)


def slide_comments(slide_part: Part, authors: dict[str, str], seen: set[str]) -> list[SlideComment]:
    """The slide's comments in stored order; a modern comment's replies follow it.
    Comments parts already in ``seen`` (read for an earlier slide) are skipped."""
    found: list[SlideComment] = []

    def record(element: etree._Element, *, is_reply: bool) -> None:
        author_id = element.get("authorId") or ""
        found.append(
            SlideComment(
                author=authors.get(author_id, "unknown author"),
                when=element.get("dt") or element.get("created") or "",
                text=_text(element),
                is_reply=is_reply,
            )
        )

    for blob in _related_blobs(slide_part, _COMMENTS, seen):
        root = etree.fromstring(blob, _PARSER)
        for comment in _children(root, "cm"):
            # a legacy reply names its parent in PowerPoint 2013's threading extension
            threaded = any(_local(element) == "parentCm" for element in comment.iter())
            record(comment, is_reply=threaded)
            for replies in _children(comment, "replyLst"):
                for reply in _children(replies, "reply"):
                    record(reply, is_reply=True)
    return found
