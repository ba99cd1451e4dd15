"""Words as search sees them, in a chunk or a question.

Postgres's parser splits words only at spaces and punctuation, so a Latin word
written against Arabic, Hebrew, Thai, CJK or Hangul letters ("وPython",
"使用Python进行", "Python을") becomes one token with them, and a search for
"Python" never finds it. Before a text is turned into lexemes, a space goes
wherever such a script meets another letter or digit. Only what is indexed
changes: chunk text, and so every location, stays the exact Markdown slice.

The same rule runs, in SQL, on both sides: the chunks' generated
``search_vector`` (``documents.Chunk``) and the question's words
(``retrieval.search``), so a question's lexemes are the chunks' lexemes; and in
Python, where the extractive generator compares a question's words with a
sentence's (``words``).
"""

from __future__ import annotations

import re

from django.db.models import Expression, Func, TextField, Value

# letters of scripts that attach words to their neighbours without a space:
# Hebrew to Arabic Extended, presentation forms, Thai, kana, CJK, Hangul
UNSPACED_RANGES = (
    (0x0590, 0x08FF),
    (0xFB1D, 0xFDFF),
    (0xFE70, 0xFEFF),
    (0x0E00, 0x0E7F),
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xAC00, 0xD7AF),
)
# as Postgres's regular expressions write them (\u escapes, read by the regex engine)
_UNSPACED_SQL = "".join(rf"\u{low:04x}-\u{high:04x}" for low, high in UNSPACED_RANGES)
# the empty boundary between such a letter and another letter or digit (Postgres ARE)
SCRIPT_BOUNDARY = (
    f"(?<=[{_UNSPACED_SQL}])(?=[[:alnum:]])(?![{_UNSPACED_SQL}])"
    f"|(?<=[[:alnum:]])(?<![{_UNSPACED_SQL}])(?=[{_UNSPACED_SQL}])"
)

_UNSPACED = "".join(f"{chr(low)}-{chr(high)}" for low, high in UNSPACED_RANGES)
_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")
_ONE_SCRIPT = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")


def spaced_scripts(text: Expression) -> Func:
    """``text`` with a space at every script boundary, as a database expression."""
    return Func(
        text,
        Value(SCRIPT_BOUNDARY),
        Value(" "),
        Value("g"),
        function="regexp_replace",
        output_field=TextField(),
    )


def words(text: str) -> list[str]:
    """``text``'s words, split where the database splits them for search."""
    return [word for run in _LETTERS_AND_DIGITS.findall(text) for word in _ONE_SCRIPT.findall(run)]
