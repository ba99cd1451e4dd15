"""The text Postgres full-text search reads: a chunk's, or a question's.

Postgres's parser splits words only at spaces and punctuation, so a Latin word
written against Arabic, Hebrew, Thai, CJK or Hangul letters ("وPython",
"使用Python进行", "Python을") becomes one token with them, and a search for
"Python" never finds it. Before a text is turned into lexemes, a space goes
wherever such a script meets another letter or digit. Only what is indexed
changes: chunk text, and so every location, stays the exact Markdown slice.

The same rule runs, in SQL, on both sides: the chunks' generated
``search_vector`` (``documents.Chunk``) and the question's words
(``retrieval.search``), so a question's lexemes are the chunks' lexemes.
"""

from __future__ import annotations

from django.db.models import Expression, Func, TextField, Value

# letters of scripts that attach words to their neighbours without a space:
# Hebrew to Arabic Extended, presentation forms, Thai, kana, CJK, Hangul
# (Postgres's regular expressions read the \u escapes)
UNSPACED_SCRIPTS = (
    r"\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff\u0e00-\u0e7f"
    r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
)
# the empty boundary between such a letter and another letter or digit (Postgres ARE)
SCRIPT_BOUNDARY = (
    f"(?<=[{UNSPACED_SCRIPTS}])(?=[[:alnum:]])(?![{UNSPACED_SCRIPTS}])"
    f"|(?<=[[:alnum:]])(?<![{UNSPACED_SCRIPTS}])(?=[{UNSPACED_SCRIPTS}])"
)


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
