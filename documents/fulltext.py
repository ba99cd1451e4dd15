"""Words as search sees them, in a chunk or a question.

Postgres's parser splits words only at spaces and punctuation, so a Latin word
written against Arabic, Hebrew, Thai, CJK or Hangul letters ("وPython",
"使用Python进行", "Python을") becomes one token with them, and a search for
"Python" never finds it. Before a text is turned into lexemes, a space goes
wherever such a script meets any other character but a space. Only what is indexed
changes: chunk text, and so every location, stays the exact Markdown slice.

The rule is part of the analyzer: ``ANALYZER``, recorded on every index and
answer, names the Postgres configuration and the rule, so answers given before
the rule existed fail analyzer parity against today's read path.

The same rule runs, in SQL, on both sides: the chunks' generated
``search_vector`` (``documents.Chunk``) and the question's words
(``retrieval.search``), so a question's lexemes are the chunks' lexemes; and in
Python, where the extractive generator compares a question's words with a
sentence's (``words``).
"""

from __future__ import annotations

import regex
from django.db.models import Expression, Func, TextField, Value
from django.db.models.expressions import Combinable

# every chunk's search_vector is made with this Postgres text search configuration
TEXT_SEARCH_CONFIG = "english"
ANALYZER = f"{TEXT_SEARCH_CONFIG}+spaced-scripts"

# scripts that attach words to their neighbours without a space
UNSPACED_RANGES = (
    (0x0590, 0x08FF),  # Hebrew, Arabic, Syriac, Thaana, N'Ko, ... Arabic Extended
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x3000, 0x30FF),  # CJK symbols (々, 〇), hiragana, katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFB1D, 0xFDFF),  # Hebrew and Arabic presentation forms A
    (0xFE70, 0xFEFC),  # Arabic presentation forms B (not the byte-order mark)
    (0xFF65, 0xFF9F),  # halfwidth katakana
    (0x20000, 0x3134F),  # CJK extensions B to G
)


def _sql_escape(code: int) -> str:
    return rf"\u{code:04x}" if code <= 0xFFFF else rf"\U{code:08x}"


# as Postgres's regular expressions write them (escapes read by the regex engine)
_UNSPACED_SQL = "".join(f"{_sql_escape(low)}-{_sql_escape(high)}" for low, high in UNSPACED_RANGES)
# the empty boundary between such a character and any other but a space (Postgres
# ARE); no locale-dependent class, so every server splits alike. A space put next
# to punctuation changes no lexeme.
SCRIPT_BOUNDARY = (
    f"(?<=[{_UNSPACED_SQL}])(?=[^{_UNSPACED_SQL}\\s])"
    f"|(?<=[^{_UNSPACED_SQL}\\s])(?=[{_UNSPACED_SQL}])"
)

_UNSPACED = "".join(f"{chr(low)}-{chr(high)}" for low, high in UNSPACED_RANGES)
# letters, digits and the marks on them (Arabic vowel signs, Thai tone marks, a
# decomposed accent), as Postgres's parser keeps them in a word
_LETTERS_AND_DIGITS = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_ONE_SCRIPT = regex.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")
_UNSPACED_CHARACTER = regex.compile(f"[{_UNSPACED}]")


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


# the labels of a chunk's context lines (documents/chunk_context.py) are no words of it
CONTEXT_LABELS = "^(?:Document|Section|Page|Record|Columns): "


def indexed_text(text: Combinable, context: Combinable) -> Func:
    """What a chunk's ``search_vector`` is made of: its text, then its context (the
    record it belongs to) without the lines' labels. An empty context adds no lexeme."""
    bare_context = Func(
        context,
        Value(CONTEXT_LABELS),
        Value(""),
        Value("gn"),  # every line's label
        function="regexp_replace",
        output_field=TextField(),
    )
    return Func(
        text,
        bare_context,
        template="(%(expressions)s)",
        arg_joiner=" || ' ' || ",
        output_field=TextField(),
    )


def words(text: str) -> list[str]:
    """``text``'s words, split where the database splits them for search."""
    runs = _LETTERS_AND_DIGITS.findall(text)
    if not _UNSPACED_CHARACTER.search(text):  # most text: no run to split
        return runs
    return [word for run in runs for word in _ONE_SCRIPT.findall(run)]


def text_search_config(analyzer: str) -> str:
    """The Postgres configuration an analyzer id names ("english+spaced-scripts",
    or a bare configuration name as recorded before the rule)."""
    return analyzer.partition("+")[0]
