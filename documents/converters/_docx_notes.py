"""Footnotes, endnotes and reviewer comments of a DOCX, which live outside the body.

Word keeps them in parts related to the main document (``footnotes.xml``,
``endnotes.xml``, ``comments.xml``; a reply's parent in ``commentsExtended.xml``)
and leaves a reference where they belong in the body. The body walker records
those references (``NoteReferences``) with the page they fall on; this module
reads the parts and writes the notes after the body, each in its own section
(``# Footnotes``, ``# Endnotes``, ``# Comments``) and each line on the page of
its reference, so a note is quotable and the quote says where it belongs.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from documents.converters._mdbuild import MarkdownBuilder, clean_inline
from documents.converters._ooxml import attribute as _attr
from documents.converters._ooxml import local_name as _local

_RELATIONSHIP_TYPES = {
    "footnote": "/footnotes",
    "endnote": "/endnotes",
    "comment": "/comments",
    "comment_threads": "/commentsExtended",
}
ANCHOR_CHARS = 120  # of the commented text quoted beside a comment
_SKIPPED = frozenset({"Fallback", "del", "delText", "instrText", "delInstrText", "rPr", "pPr"})


@dataclass
class NoteReferences:
    """What the body walk saw: notes in order of first reference, with their pages,
    and the text each comment is anchored to."""

    labels: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, id) -> label
    pages: dict[tuple[str, str], int] = field(default_factory=dict)
    anchors: dict[str, list[str]] = field(default_factory=dict)  # comment id -> text
    open_anchors: set[str] = field(default_factory=set)

    def note(self, kind: str, note_id: str | None, page: int) -> str | None:
        """The label of a footnote (``1``, ``2``…) or endnote (``e1``…) referenced here."""
        if note_id is None:
            return None
        key = (kind, note_id)
        if key not in self.labels:
            count = sum(1 for k, _ in self.labels if k == kind) + 1
            self.labels[key] = f"{count}" if kind == "footnote" else f"e{count}"
            self.pages[key] = page
        return self.labels[key]

    def comment(self, comment_id: str | None, page: int) -> None:
        if comment_id is not None:
            self.pages.setdefault(("comment", comment_id), page)

    def anchor_start(self, comment_id: str | None) -> None:
        if comment_id is not None:
            self.anchors.setdefault(comment_id, [])
            self.open_anchors.add(comment_id)

    def anchor_end(self, comment_id: str | None) -> None:
        self.open_anchors.discard(comment_id or "")

    def anchor_text(self, text: str, page: int) -> None:
        """Body text read while comments are open belongs to their anchors (bounded);
        a comment's page is the page its anchored text starts on."""
        for comment_id in self.open_anchors:
            pieces = self.anchors[comment_id]
            if text.strip():
                self.pages.setdefault(("comment", comment_id), page)
            if sum(map(len, pieces)) <= ANCHOR_CHARS:
                pieces.append(text)


def plain_text(element: etree._Element) -> str:
    """A note's text, paragraphs and breaks read as spaces, deleted text and
    field codes left out."""

    def walk(node: etree._Element) -> Iterator[str]:
        for child in node:
            name = _local(child)
            if name in _SKIPPED:
                continue
            if name == "t":
                yield child.text or ""
            elif name in ("tab", "br", "cr"):
                yield " "
            else:
                if name == "p":
                    yield " "
                yield from walk(child)

    return clean_inline("".join(walk(element)))


def related_parts(
    archive: zipfile.ZipFile, main: str, read: Callable[[str], etree._Element | None]
) -> dict[str, str]:
    """Kind -> part name of the notes parts the main document relates to."""
    folder, name = posixpath.split(main)
    rels = read(posixpath.join(folder, "_rels", f"{name}.rels"))
    parts: dict[str, str] = {}
    for rel in rels if rels is not None else []:
        kind = _attr(rel, "Type") or ""
        target = _attr(rel, "Target") or ""
        if _attr(rel, "TargetMode") == "External" or not target:
            continue
        for key, suffix in _RELATIONSHIP_TYPES.items():
            if kind.endswith(suffix):
                absolute = target.startswith("/")
                path = target.lstrip("/") if absolute else posixpath.join(folder, target)
                parts[key] = posixpath.normpath(path)
    return {key: path for key, path in parts.items() if path in archive.namelist()}


def _by_id(root: etree._Element | None, name: str) -> dict[str, etree._Element]:
    if root is None:
        return {}
    return {_attr(el, "id") or "": el for el in root if _local(el) == name}


def _write_notes(
    md: MarkdownBuilder, refs: NoteReferences, kind: str, root: etree._Element | None
) -> int:
    bodies = _by_id(root, kind)
    written = 0
    for (ref_kind, note_id), label in refs.labels.items():
        text = plain_text(bodies[note_id]) if ref_kind == kind and note_id in bodies else ""
        if not text:
            continue
        page = refs.pages[(kind, note_id)]
        if not written:
            md.heading(1, "Footnotes" if kind == "footnote" else "Endnotes", page)
        md.line(f"[^{label}]: {text}", page)
        written += 1
    md.blank()
    return written


def _reply_parents(
    comments: dict[str, etree._Element], threads: etree._Element | None
) -> dict[str, str]:
    """Comment id -> the id of the comment it replies to (``commentsExtended.xml``
    links the paragraph ids of a reply's and its parent's last paragraphs)."""
    if threads is None:
        return {}
    by_paragraph: dict[str, str] = {}
    for comment_id, comment in comments.items():
        paragraphs = [el for el in comment.iter() if _local(el) == "p"]
        if paragraphs and (paragraph_id := _attr(paragraphs[-1], "paraId")):
            by_paragraph[paragraph_id] = comment_id
    parents: dict[str, str] = {}
    for entry in threads.iter():
        if _local(entry) != "commentEx":
            continue
        child = by_paragraph.get(_attr(entry, "paraId") or "")
        parent = by_paragraph.get(_attr(entry, "paraIdParent") or "")
        if child and parent and child != parent:
            parents[child] = parent
    return parents


def _comment_line(comment: etree._Element, anchor: str, *, is_reply: bool) -> str | None:
    text = plain_text(comment)
    if not text:
        return None
    author = clean_inline(_attr(comment, "author") or "") or "unknown author"
    initials = clean_inline(_attr(comment, "initials") or "")
    who = f"{author} ({initials})" if initials and initials != author else author
    when = clean_inline(_attr(comment, "date") or "")
    who += f", {when}" if when else ""
    if is_reply:
        return f"  - Reply by {who}: {text}"
    if len(anchor) > ANCHOR_CHARS:
        anchor = anchor[:ANCHOR_CHARS].rsplit(" ", 1)[0] + "…"
    on = f", on “{anchor}”" if anchor else ""
    return f"- {who}{on}: {text}"


def _write_comments(
    md: MarkdownBuilder,
    refs: NoteReferences,
    root: etree._Element | None,
    threads: etree._Element | None,
) -> int:
    comments = _by_id(root, "comment")
    parents = _reply_parents(comments, threads)
    referenced = [note_id for kind, note_id in refs.pages if kind == "comment"]
    replies: dict[str, list[str]] = {}
    for reply, parent in parents.items():
        replies.setdefault(parent, []).append(reply)
    written = 0
    for comment_id in referenced:
        if comment_id not in comments or comment_id in parents:
            continue  # a reply follows its parent
        page = refs.pages[("comment", comment_id)]
        anchor = clean_inline("".join(refs.anchors.get(comment_id, [])))
        thread = [(comment_id, False)] + [(reply, True) for reply in replies.get(comment_id, [])]
        for member, is_reply in thread:
            line = _comment_line(comments[member], anchor, is_reply=is_reply)
            if line is None:
                continue
            if not written:
                md.heading(1, "Comments", page)
            md.line(line, page)
            written += 1
    md.blank()
    return written


def notes_write(
    md: MarkdownBuilder,
    refs: NoteReferences,
    archive: zipfile.ZipFile,
    main: str,
    read: Callable[[str], etree._Element | None],
) -> dict[str, int]:
    """Append the referenced footnotes, endnotes and comments after the body;
    returns how many of each were written."""
    parts = related_parts(archive, main, read)

    def root(kind: str) -> etree._Element | None:
        return read(parts[kind]) if kind in parts else None

    return {
        "footnotes": _write_notes(md, refs, "footnote", root("footnote")),
        "endnotes": _write_notes(md, refs, "endnote", root("endnote")),
        "comments": _write_comments(md, refs, root("comment"), root("comment_threads")),
    }
