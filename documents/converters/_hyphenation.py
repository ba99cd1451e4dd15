"""Whether a hyphen at a line end splits one word ("lever-/age") or is part of a
compound ("chat-/optimized"), so paragraphs are rejoined without inventing words.

The document itself is asked first: a compound written whole elsewhere in it
("chat-optimized") keeps its hyphen, a word written whole ("leverage") loses it.
When the document does not tell, an English word list with inflections
(pyspellchecker's, 160k words) does: a joined form that is a word is one word;
two halves that are both words (and no joined word) are a compound. Anything
else (names, Latin, jargon) is joined, as a typesetter's hyphenation usually is.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

_LONGEST_WORD = 64  # the letters before a line-end hyphen are looked for this far back
_TOKEN = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """pyspellchecker's English word list, read once per process and only when a
    document leaves a line-end hyphen undecided. Read from the package's data file
    rather than through ``SpellChecker``, which also indexes it and so takes longer."""
    words = resources.files("spellchecker") / "resources" / "en.json.gz"
    return frozenset(json.loads(gzip.decompress(words.read_bytes())))


class LineEndHyphens:
    """Decides line-end hyphens for one document from the words of its lines.

    Only whole tokens inside lines are evidence: the fragments around a line-end
    hyphen ("lever-", "age") are no words of their own, so the halves of an
    undecided pair are looked up in the word list alone. The document's words
    are gathered at the first line-end hyphen (a document without one pays
    nothing).
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._words: set[str] | None = None
        self._compounds: set[tuple[str, str]] = set()

    def _evidence(self) -> set[str]:
        if self._words is None:
            self._words = set(_TOKEN.findall("\n".join(self._lines).lower()))
            for token in self._words:
                if "-" in token:
                    parts = token.split("-")
                    self._compounds.update(zip(parts, parts[1:], strict=False))
        return self._words

    def keeps_hyphen(self, before: str, after: str) -> bool:
        """``before`` ends with the letters in front of the hyphen, ``after`` starts
        with the letters that continue on the next line."""
        head = _last_word(before)
        tail = _first_word(after)
        if not head or not tail:
            return False
        words = self._evidence()  # hyphenated tokens in it never equal a joined word
        if (head, tail) in self._compounds:
            return True
        forms = _forms(head + tail)
        if any(form in words for form in forms):
            return False
        english = english_words()
        if any(form in english for form in forms):
            return False
        return _known(head, english) and _known(tail, english)


_ENDINGS = ("s", "es", "ed", "d", "ing", "er", "ers")


def _forms(word: str) -> list[str]:
    """``word`` and its stems without a common ending: "data-/sets" is one word in a
    paper that writes "dataset", though neither word list has "datasets"."""
    return [word] + [
        word[: -len(ending)]
        for ending in _ENDINGS
        if word.endswith(ending) and len(word) - len(ending) >= 4
    ]


def _known(word: str, words: frozenset[str]) -> bool:
    """A half of a compound is a word of two letters or more ("e-/mail" is joined)."""
    return len(word) > 1 and word in words


def _last_word(text: str) -> str:
    match = re.search(r"([^\W\d_]+)-$", text[-_LONGEST_WORD:])
    return match.group(1).lower() if match else ""


def _first_word(text: str) -> str:
    match = re.match(r"[^\W\d_]+", text)
    return match.group(0).lower() if match else ""
