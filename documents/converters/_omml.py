"""Word equations (Office Math, OMML) as one line of linear text.

Read as plain runs, an equation loses what its layout says: the exponent of
``10`` followed by ``-6`` reads as ten minus six, a fraction's numerator runs
into its denominator. Here the layout becomes marks in the text, LaTeX's
linear notation without its command words (every word stays one of the
document's, so a search and a citation find it): ``10^{-6}``, ``x_{i}``,
``(mλ)/(a)``, ``√(x)``, delimiters as drawn. Structures without a mark of
their own (matrices, accents, limits) keep their text in reading order. An
equation in a line of text is set between ``$``, a displayed one (Word's
equation paragraph) between ``$$``, as Markdown renderers with math support
and markitdown write them.
"""

from __future__ import annotations

import re

from lxml import etree

from documents.converters._ooxml import attribute, local_name

_ATOM = re.compile(r"[\w.,′']+")  # needs no brackets around it


def is_math(element: etree._Element) -> bool:
    """An element of the Office Math namespace (transitional or ISO strict)."""
    namespace = etree.QName(element).namespace or ""
    return namespace.endswith("/math")


def equation_markdown(element: etree._Element) -> str:
    """``$…$`` for an ``oMath``, ``$$…$$`` for an ``oMathPara``; "" if it holds no text."""
    if local_name(element) == "oMathPara":
        parts = [omml_text(m).strip() for m in element if local_name(m) == "oMath"]
        text = " ".join(p for p in parts if p)
        return f"$${text}$$" if text else ""
    text = omml_text(element).strip()
    return f"${text}$" if text else ""


def omml_text(element: etree._Element) -> str:
    """The linear text of an OMML element (``oMath`` or any part of it)."""
    name = local_name(element)
    if name == "t":
        return element.text or ""
    if name.endswith("Pr"):  # properties: fPr, sSupPr, ctrlPr, rPr…
        return ""
    if name == "f":
        return f"{_grouped(_part(element, 'num'))}/{_grouped(_part(element, 'den'))}"
    if name == "sSup":
        return _part(element, "e") + _script("^", _part(element, "sup"))
    if name == "sSub":
        return _part(element, "e") + _script("_", _part(element, "sub"))
    if name == "sSubSup":
        sub, sup = _part(element, "sub"), _part(element, "sup")
        return _part(element, "e") + _script("_", sub) + _script("^", sup)
    if name == "sPre":
        sub, sup = _part(element, "sub"), _part(element, "sup")
        return _script("_", sub) + _script("^", sup) + _part(element, "e")
    if name == "rad":
        degree = _part(element, "deg")
        return _script("^", degree) + "√" + _grouped(_part(element, "e"))
    if name == "d":
        return _delimited(element)
    if name == "nary":
        sign = _property(element, "naryPr", "chr") or "∫"
        sub, sup = _part(element, "sub"), _part(element, "sup")
        return sign + _script("_", sub) + _script("^", sup) + " " + _part(element, "e")
    return "".join(omml_text(child) for child in element)


def _part(element: etree._Element, name: str) -> str:
    """The text of the first child called ``name`` (``e``, ``num``, ``sup``…)."""
    for child in element:
        if local_name(child) == name:
            return omml_text(child).strip()
    return ""


def _property(element: etree._Element, holder: str, name: str) -> str | None:
    """``m:val`` of a property (``chr``, ``begChr``…) inside the ``holder`` child."""
    for child in element:
        if local_name(child) == holder:
            for prop in child:
                if local_name(prop) == name:
                    return attribute(prop, "val")
    return None


def _grouped(text: str) -> str:
    """Brackets around anything longer than one atom: ``(mλ)/(a)`` stays a fraction."""
    if _ATOM.fullmatch(text) or (text.startswith("(") and text.endswith(")") and _balanced(text)):
        return text
    return f"({text})"


def _balanced(text: str) -> bool:
    """Whether the first bracket closes at the end: ``(a)(b)`` is two groups, not one."""
    depth = 0
    for index, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and index < len(text) - 1:
            return False
    return depth == 0


def _script(mark: str, text: str) -> str:
    if not text:
        return ""
    return f"{mark}{text}" if len(text) == 1 else f"{mark}{{{text}}}"


def _delimited(element: etree._Element) -> str:
    begin = _property(element, "dPr", "begChr")
    end = _property(element, "dPr", "endChr")
    separator = _property(element, "dPr", "sepChr")
    items = [omml_text(child).strip() for child in element if local_name(child) == "e"]
    return (
        ("(" if begin is None else begin)
        + ("|" if separator is None else separator).join(items)
        + (")" if end is None else end)
    )
