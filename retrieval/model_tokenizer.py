"""The model's tokenizer for its export, read without transformers or torch.

A process that embeds through the export (ONNX Runtime or OpenVINO) needs only
token ids. Loading them through sentence-transformers imports torch and
transformers first: ~12 s of every worker's and web process's start on a 2-vCPU
host, and ~0.5 GB of memory, for a model it never runs. The ``tokenizers``
library reads the model's own ``tokenizer.json`` in milliseconds; it is the
Rust tokenizer transformers' fast tokenizer drives, so the ids are the same
(``tests/retrieval/test_model_tokenizer.py`` compares them on the corpus).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer


class ModelTokenizer:
    """Called as transformers' tokenizer is by the encoders: ``input_ids`` of each
    text with the model's special tokens, cut at ``max_length`` tokens."""

    def __init__(self, model_dir: Path, max_length: int) -> None:
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_padding()
        # set once: changing it per call would race between a web process's threads
        tokenizer.enable_truncation(max_length)
        self.max_length = max_length
        self._tokenizer = tokenizer
        config = json.loads((model_dir / "tokenizer_config.json").read_text())
        pad = tokenizer.token_to_id(config.get("pad_token") or "[PAD]")
        self.pad_token_id = pad if pad is not None else 0

    def __call__(
        self, texts: Sequence[str], *, truncation: bool = True, max_length: int | None = None
    ) -> dict[str, list[list[int]]]:
        if not truncation or (max_length is not None and max_length != self.max_length):
            raise ValueError(f"this tokenizer cuts every text at {self.max_length} tokens")
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        return {"input_ids": [encoding.ids for encoding in encodings]}
