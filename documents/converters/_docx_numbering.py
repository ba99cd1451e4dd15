"""List markers as Word shows them: "3.", "b)", "iv.", "2.1." instead of one bullet.

A numbered paragraph names a list (``w:numId``) and a level (``w:ilvl``) in its
own properties or its style's; ``numbering.xml`` gives each level its number
format, start and text ("%1.", "(%1)", "%1.%2."). Counting the items in
document order gives the numbers a reader sees, which is what a clause or a
step is cited by. Lists of one abstract definition share their count unless a
list restarts it (``w:startOverride``); a level restarts below a higher one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from documents.converters._ooxml import attribute, local_name

_PLACEHOLDER = re.compile(r"%([1-9])")
_ROMAN = [
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
]  # fmt: skip
MAX_LEVELS = 9
BULLET = "- "


@dataclass(frozen=True)
class _Level:
    format: str  # decimal, lowerLetter, upperRoman, bullet, none, …
    start: int
    text: str  # lvlText: "%1." or "%1.%2." or a bullet glyph


def _child(element: etree._Element | None, name: str) -> etree._Element | None:
    for child in element if element is not None else []:
        if local_name(child) == name:
            return child
    return None


def _value(element: etree._Element | None, name: str) -> str | None:
    return attribute(_child(element, name), "val")


def _number(text: str | None, default: int) -> int:
    return int(text) if text and text.isdigit() and int(text) < 100_000 else default


def _level_number(text: str | None) -> int:
    level = _number(text, 0)
    return level if level < MAX_LEVELS else 0


def formatted(value: int, number_format: str) -> str:
    """``value`` as Word writes it in ``number_format``."""
    if number_format in ("lowerLetter", "upperLetter"):
        letters = ""
        while value > 0:
            value, rest = divmod(value - 1, 26)
            letters = chr(ord("a") + rest) + letters
        return letters.upper() if number_format == "upperLetter" else letters
    if number_format in ("lowerRoman", "upperRoman") and 0 < value < 4000:
        roman = ""
        for amount, digits in _ROMAN:
            count, value = divmod(value, amount)
            roman += digits * count
        return roman.upper() if number_format == "upperRoman" else roman
    if number_format == "decimalZero":
        return f"{value:02d}"
    return str(value)


class Numbering:
    """The numbering definitions of one document and the count of each list so far."""

    def __init__(self, numbering: etree._Element | None, styles: etree._Element | None) -> None:
        self._abstract: dict[str, dict[int, _Level]] = {}
        self._lists: dict[str, tuple[str, dict[int, int]]] = {}  # numId -> (abstract, starts)
        self._style_lists: dict[str, tuple[str, int]] = {}  # styleId -> (numId, level)
        self._counts: dict[str, list[int | None]] = {}
        for element in numbering if numbering is not None else []:
            name = local_name(element)
            if name == "abstractNum":
                self._abstract[attribute(element, "abstractNumId") or ""] = _levels(element)
            elif name == "num":
                starts = {
                    _level_number(attribute(override, "ilvl")): _number(
                        _value(override, "startOverride"), 1
                    )
                    for override in element
                    if local_name(override) == "lvlOverride"
                    and _child(override, "startOverride") is not None
                }
                self._lists[attribute(element, "numId") or ""] = (
                    _value(element, "abstractNumId") or "",
                    starts,
                )
        for style in styles if styles is not None else []:
            if local_name(style) != "style":
                continue
            listed = _child(_child(style, "pPr"), "numPr")
            if listed is not None and _value(listed, "numId"):
                self._style_lists[attribute(style, "styleId") or ""] = (
                    _value(listed, "numId") or "",
                    _level_number(_value(listed, "ilvl")),
                )

    def marker(
        self, paragraph_properties: etree._Element | None, style_id: str
    ) -> tuple[int, str] | None:
        """The level and marker of this paragraph as the next item of its list
        ("3. ", "- "), the count advanced; None if the paragraph is not in a list
        Word numbers, an empty marker if its level shows none."""
        listed = _child(paragraph_properties, "numPr")
        num_id = _value(listed, "numId")
        level = _value(listed, "ilvl")
        if num_id is None and style_id in self._style_lists:
            num_id, style_level = self._style_lists[style_id]
            level = level if level is not None else str(style_level)
        if num_id is None or num_id == "0" or num_id not in self._lists:
            return None
        abstract_id, starts = self._lists[num_id]
        levels = self._abstract.get(abstract_id, {})
        depth = _level_number(level)
        definition = levels.get(depth)
        if definition is None:
            return None
        key = num_id if starts else f"abstract:{abstract_id}"
        counts = self._counts.setdefault(key, [None] * MAX_LEVELS)
        for deeper in range(depth + 1, MAX_LEVELS):
            counts[deeper] = None
        current = counts[depth]
        counts[depth] = starts.get(depth, definition.start) if current is None else current + 1
        if definition.format == "bullet":
            return depth, BULLET
        if definition.format == "none":
            return depth, ""

        def number(match: re.Match[str]) -> str:
            index = int(match.group(1)) - 1
            shown = levels.get(index, definition)
            value = counts[index]
            if value is None:  # a level above never used: Word shows its start
                value = starts.get(index, shown.start)
            return formatted(value, shown.format)

        text = _PLACEHOLDER.sub(number, definition.text).strip()
        return depth, (f"{text} " if text else "")


def _levels(abstract: etree._Element) -> dict[int, _Level]:
    levels: dict[int, _Level] = {}
    for level in abstract:
        if local_name(level) != "lvl":
            continue
        levels[_level_number(attribute(level, "ilvl"))] = _Level(
            format=_value(level, "numFmt") or "decimal",
            start=_number(_value(level, "start"), 1),
            text=_value(level, "lvlText") or "",
        )
    return levels
