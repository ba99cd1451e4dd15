"""Print how much of each ground-truth Markdown our converters recover.

Recall = share of the ground truth's words that also occur in our Markdown
(``tests/support/ground_truth.py``: multiset of lower-cased ``\\w+`` tokens, HTML
comments removed, Markdown escapes undone). Ground truth: docling
``groundtruth/*.md`` and markitdown ``expected_outputs/*.md`` in ``../shared/corpus``.

Usage: python bench/recall_report.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"


def pairs() -> list[tuple[str, Path, Path]]:
    """(kind, source file, ground-truth Markdown) for every corpus file that has one."""
    out: list[tuple[str, Path, Path]] = []
    for truth in sorted((CORPUS / "docling").glob("*/groundtruth/*.md")):
        kind = truth.parent.parent.name
        name = truth.name[: -len(".md")]
        source = truth.parent.parent / (name if kind != "pdf" else name + ".pdf")
        if kind in ("pdf", "docx", "pptx") and source.exists():
            out.append((kind, source, truth))
    for truth in sorted((CORPUS / "markitdown/test_files/expected_outputs").glob("*.md")):
        source = truth.parent.parent / (truth.stem + ".pdf")
        if source.exists() and truth.read_text("utf-8").strip():
            out.append(("pdf", source, truth))
    hostile = CORPUS / "hostile/docling/powerpoint_malformed_pictures.pptx"
    out.append(("pptx", hostile, hostile.with_name(hostile.name + ".md")))
    return out


def main() -> None:
    from documents.converters import converter_for
    from tests.support.ground_truth import recall

    per_kind: dict[str, list[float]] = {}
    print(f"{'kind':5s} {'recall':>7s}  file")
    for kind, source, truth in pairs():
        ours = converter_for(kind).convert(source.read_bytes()).markdown
        value = recall(truth.read_text("utf-8"), ours)
        per_kind.setdefault(kind, []).append(value)
        print(f"{kind:5s} {value:7.3f}  {source.relative_to(CORPUS)}")
    print()
    for kind, values in per_kind.items():
        print(
            f"{kind:5s} mean {sum(values) / len(values):.3f}  "
            f"min {min(values):.3f}  files {len(values)}"
        )


if __name__ == "__main__":
    main()
