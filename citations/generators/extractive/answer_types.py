"""What kind of value a question asks for, and whether a candidate holds one.

"What is the phone number of …?" wants a phone number; a row that names the person
but holds no phone number does not answer it, however close in meaning. The kinds
are those questions about documents ask most: a phone number, a date or year, a
count or amount, a code (a VIN, a policy or invoice number), a person, a place.
"""

from __future__ import annotations

import re

import regex

PHONE, DATE, NUMBER, CODE, PERSON, PLACE = "phone", "date", "number", "code", "person", "place"
FORMULA = "formula"

_ASKS = (
    (FORMULA, re.compile(r"\b(?:formulae?|formulas|equations?)\b", re.I)),
    (PHONE, re.compile(r"\b(?:phone|telephone|tel|mobile|fax|call|reached)\b", re.I)),
    # "when", "what year", "which day": not "how many days", nor "per month"
    (
        DATE,
        re.compile(
            r"\bwhen\b|\b(?:what|which)\s+(?:year|date|day|month|century|decade)\b"
            r"|\bdate\b",
            re.I,
        ),
    ),
    (
        NUMBER,
        re.compile(
            r"\bhow (?:many|much|long|old|far|large|big|high|tall)\b"
            r"|\b(?:total|amount|cost|price|percentage|percent|population|size|rate)\b"
            r"|\b(?:the|a) number of\b",
            re.I,
        ),
    ),
    (
        CODE,
        re.compile(
            r"\b(?:vin|id|identifier|code|serial|reference|policy|invoice|account)\b"
            r"|\b(?!(?:tele)?phone\b|mobile\b|fax\b)\w+ (?:number|no\.?|#)",
            re.I,
        ),
    ),
    (PERSON, re.compile(r"\b(?:who|whom|whose)\b", re.I)),
    (PLACE, re.compile(r"\bwhere\b", re.I)),
)
_PHONE = re.compile(r"(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{2,4}[\s.-])\d{3,4}[\s.-]?\d{3,4}")
_DATE = re.compile(
    r"\b(?:1[0-9]|20)\d{2}\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b",
    re.I,
)
# a count is written in digits or in words ("twenty-five days", "a dozen", "half")
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
    r"|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half|once"
    r"|twice|single|double|triple)\b",
    re.I,
)
_CODE = regex.compile(r"\b(?=[\w-]*\d)(?=[\w-]*\p{L})[\w-]{5,}\b|\b\d[\d-]{5,}\d\b")
_PERSON = regex.compile(r"\b\p{Lu}\p{Ll}+(?:\s+\p{Lu}\.?)?\s+\p{Lu}\p{Ll}+")
_PLACE = regex.compile(r"\b\p{Lu}\p{Ll}{2,}")
# an equation: operands either side of "=" ("a^2^ + 8 = 12", "E = mc^2")
FORMULA_LINE = re.compile(
    r"^(?=.*[\d^+*/])(?=.{3,80}$)\s*\$*[\w^{}()\\.+\-*/ ]+=[\w^{}()\\.+\-*/ ]+\$*\s*$"
)
_HOLDS = {
    FORMULA: FORMULA_LINE,
    PHONE: _PHONE,
    DATE: _DATE,
    NUMBER: _NUMBER,
    CODE: _CODE,
    PERSON: _PERSON,
    PLACE: _PLACE,
}


def asked_types(question: str) -> frozenset[str]:
    """The kinds of value ``question`` asks for (none for an open question)."""
    return frozenset(kind for kind, pattern in _ASKS if pattern.search(question))


def holds_type(text: str, kinds: frozenset[str], question: str) -> bool:
    """Whether ``text`` holds a value of the most specific of ``kinds`` (a phone
    number is a number, but a question for one is not answered by a VIN) that the
    question does not already say (a sentence repeating the question's own year
    answers nothing)."""
    kind = next((k for k in _SPECIFIC_FIRST if k in kinds), None)
    if kind is None:
        return False
    said = question.casefold()
    return any(m.group().casefold() not in said for m in _HOLDS[kind].finditer(text))


_SPECIFIC_FIRST = (FORMULA, PHONE, DATE, CODE, NUMBER, PERSON, PLACE)
