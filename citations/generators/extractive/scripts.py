"""The words a question and a sentence are compared on, in any script: stems,
Chinese and Japanese character pairs, stop words left out, and word counts."""

from __future__ import annotations

import regex

from documents.fulltext import words

# Chinese and Japanese write words without spaces: a run of these is many words
_HAN_AND_KANA = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\u30fc]+")
_HIRAGANA = regex.compile(r"\p{Hiragana}+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
        "did",
        "many",
        "much",
    ]
)


def stems(text: str) -> set[str]:
    """What a question and a sentence are compared on: word stems, and the
    character pairs of Chinese and Japanese runs (their words are not delimited).
    Pairs of hiragana only are left out: they are mostly endings and particles
    ("です", "ます"), the stop words of Japanese."""
    found: set[str] = set()
    for word in words(text):
        word = word.lower()
        if _HAN_AND_KANA.fullmatch(word):
            pairs = (word[n : n + 2] for n in range(max(1, len(word) - 1)))
            found.update(pair for pair in pairs if not _HIRAGANA.fullmatch(pair))
        elif word not in _STOP:
            found.add(word[:6])
    return found


def word_count(text: str) -> int:
    """Words for the length floor; a Chinese or Japanese run counts two words per
    three characters (their words average one and a half), rounded up."""
    return sum(
        -(-2 * len(word) // 3) if _HAN_AND_KANA.fullmatch(word) else 1 for word in words(text)
    )
