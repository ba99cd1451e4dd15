"""Word recall of a converter's Markdown against a corpus ground truth.

Recall = share of the ground truth's words (multiset, lower-cased, ``\\w+``
tokens) that also occur in ours. HTML comments (docling's ``<!-- image -->``)
are removed and Markdown backslash escapes undone on both sides, so
``different\\_first\\_page`` counts as the one word the document holds, not as
four words our unescaped Markdown "misses".
"""

from __future__ import annotations

import re
from collections import Counter

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: any ASCII punctuation


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", _ESCAPE.sub(r"\1", _COMMENT.sub(" ", text)).lower()))


def recall(truth: str, ours: str) -> float:
    want, have = words(truth), words(ours)
    total = sum(want.values())
    return 1.0 if total == 0 else sum(min(n, have[w]) for w, n in want.items()) / total
