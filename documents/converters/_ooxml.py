"""Reading Office Open XML by local names, so the namespace versions of DOCX,
ISO "Strict" DOCX and PPTX parts do not matter."""

from __future__ import annotations

from lxml import etree


def local_name(element: etree._Element) -> str:
    """The tag without its namespace; "" for comments and processing instructions."""
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def attribute(element: etree._Element | None, name: str) -> str | None:
    """The value of the attribute whose local name is ``name``, in any namespace."""
    if element is None:
        return None
    for key, value in element.attrib.items():
        if key.rsplit("}", 1)[-1] == name:
            return value
    return None
