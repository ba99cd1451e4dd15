"""The cot-source-attribution document's service, ported: its examples and unit
tests as written (module names adapted), the raw-string mode, and the summary rules
at their edges (exactly 0.7, fewer than three sources, ties)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from citations.reasoning.attribution import (
    ReasoningStep,
    SourceAttribution,
    SourceAttributionService,
    SourceSummary,
)


def _step(number: int, *sources: tuple[str, float], confidence: float = 1.0) -> ReasoningStep:
    return ReasoningStep(
        step_number=number,
        question=f"q{number}",
        intermediate_answer=f"a{number}",
        confidence_score=confidence,
        source_attributions=[
            SourceAttribution(document_id=d, relevance_score=r, document_title=d.upper())
            for d, r in sources
        ],
    )


def test_source_extraction_from_context() -> None:
    """The document's unit test, as written."""
    service = SourceAttributionService()
    context_docs = ["id:doc_123 Machine learning content...", "Deep learning overview..."]

    attributions = service.extract_sources_from_context(context_docs)

    assert len(attributions) == 2
    assert attributions[0].document_id == "doc_123"
    assert attributions[0].relevance_score > 0.3


def test_raw_strings_take_the_id_prefix_the_rank_heuristic_and_a_content_id() -> None:
    service = SourceAttributionService()
    docs = ["id:doc_123 Artificial intelligence involves creating systems..."]
    docs += [f"Passage number {i}" for i in range(1, 10)]

    found = service.extract_sources_from_context(docs)

    assert found[0].document_id == "doc_123"
    assert found[0].excerpt == "Artificial intelligence involves creating systems..."
    assert [a.relevance_score for a in found] == pytest.approx(
        [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.3, 0.3]  # max(0.3, 1 - 0.1 i)
    )
    assert [a.retrieval_rank for a in found] == list(range(1, 11))
    assert found[1].document_id.startswith("context_")  # no prefix: named by its content
    again = service.extract_sources_from_context(["x", "Passage number 1"])
    assert again[1].document_id == found[1].document_id


def test_structured_search_results_are_preferred() -> None:
    """The document's structured example."""
    service = SourceAttributionService()
    search_results: list[dict[str, Any]] = [
        {
            "document_id": "doc_123",
            "title": "Introduction to AI",
            "score": 0.92,
            "content": "Artificial intelligence involves..." + "x" * 300,
            "chunk_index": 0,
        },
        {"document_id": "doc_456", "title": "No score", "content": "…"},
    ]

    found = service.extract_sources_from_context(["ignored"], search_results)

    assert [(a.document_id, a.document_title, a.chunk_index) for a in found] == [
        ("doc_123", "Introduction to AI", 0),
        ("doc_456", "No score", None),
    ]
    assert found[0].relevance_score == 0.92 and found[1].relevance_score == pytest.approx(0.9)
    assert found[0].excerpt is not None and len(found[0].excerpt) == 200  # the first 200
    assert [a.retrieval_rank for a in found] == [1, 2]


def test_create_source_attribution_as_in_the_document_and_its_cache() -> None:
    service = SourceAttributionService()
    attribution = service.create_source_attribution(
        document_id="ml_handbook_ch3",
        relevance_score=0.85,
        document_title="Machine Learning Handbook - Chapter 3",
        excerpt="Machine learning algorithms can be categorized into supervised...",
        chunk_index=2,
        retrieval_rank=1,
    )
    assert attribution == SourceAttribution(
        document_id="ml_handbook_ch3",
        document_title="Machine Learning Handbook - Chapter 3",
        relevance_score=0.85,
        excerpt="Machine learning algorithms can be categorized into supervised...",
        chunk_index=2,
        retrieval_rank=1,
    )
    assert service._source_cache["ml_handbook_ch3"] is attribution


@pytest.mark.parametrize("bad", [1.2, -0.1, float("nan"), "0.5", True])
def test_a_relevance_outside_0_to_1_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="relevance_score"):
        # deliberately the wrong type too: the service checks at run time
        SourceAttributionService().create_source_attribution("doc", cast("float", bad))


def test_an_empty_document_id_or_a_zero_rank_is_refused() -> None:
    service = SourceAttributionService()
    with pytest.raises(ValueError, match="document_id"):
        service.create_source_attribution(" ", 0.5)
    with pytest.raises(ValueError, match="1-based"):
        service.create_source_attribution("doc", 0.5, retrieval_rank=0)


def test_aggregation_dedups_by_document_keeping_the_highest_relevance() -> None:
    steps = [
        _step(1, ("ml_guide", 0.6), ("ai_intro", 0.8)),
        _step(2, ("ml_guide", 0.92), ("dl_paper", 0.5), ("ml_guide", 0.1)),
    ]

    summary = SourceAttributionService().aggregate_sources_across_steps(steps)

    assert [(s.document_id, s.relevance_score) for s in summary.all_sources] == [
        ("ml_guide", 0.92),
        ("ai_intro", 0.8),
        ("dl_paper", 0.5),
    ]
    assert summary.source_usage_by_step == {
        1: ["ml_guide", "ai_intro"],
        2: ["ml_guide", "dl_paper"],
    }


def test_primary_sources_are_the_top_three_above_0_7() -> None:
    steps = [_step(1, ("a", 0.95), ("b", 0.9), ("c", 0.85), ("d", 0.8), ("e", 0.2))]
    summary = SourceAttributionService().aggregate_sources_across_steps(steps)
    assert [s.document_id for s in summary.primary_sources] == ["a", "b", "c"]


def test_exactly_0_7_is_not_above_it() -> None:
    steps = [_step(1, ("strong", 0.71), ("edge", 0.7), ("weak", 0.3))]
    summary = SourceAttributionService().aggregate_sources_across_steps(steps)
    assert [s.document_id for s in summary.primary_sources] == ["strong"]


def test_without_any_source_above_0_7_the_top_three_overall() -> None:
    steps = [_step(1, ("a", 0.7), ("b", 0.5), ("c", 0.4), ("d", 0.3))]
    summary = SourceAttributionService().aggregate_sources_across_steps(steps)
    assert [s.document_id for s in summary.primary_sources] == ["a", "b", "c"]


def test_fewer_than_three_sources_are_all_primary_and_none_is_no_summary() -> None:
    service = SourceAttributionService()
    two = service.aggregate_sources_across_steps([_step(1, ("a", 0.2), ("b", 0.1))])
    assert [s.document_id for s in two.primary_sources] == ["a", "b"]
    empty = service.aggregate_sources_across_steps([_step(1)])
    assert empty == SourceSummary(source_usage_by_step={1: []})


def test_ties_keep_the_order_of_first_use() -> None:
    steps = [_step(1, ("first", 0.8)), _step(2, ("second", 0.8), ("third", 0.8), ("fourth", 0.8))]
    summary = SourceAttributionService().aggregate_sources_across_steps(steps)
    assert [s.document_id for s in summary.primary_sources] == ["first", "second", "third"]
    same = [_step(1, ("same", 0.8)), _step(2, ("same", 0.8))]
    tie = SourceAttributionService().aggregate_sources_across_steps(same)
    assert tie.all_sources == [same[0].source_attributions[0]]
    assert tie.all_sources[0] is same[0].source_attributions[0]  # the first seen is kept


def test_enhancing_a_step_scales_relevance_by_its_confidence() -> None:
    service = SourceAttributionService()
    step = ReasoningStep(1, "q", "a", confidence_score=0.5, context_used=["id:doc_1 text"])

    from_context = service.enhance_reasoning_step_with_sources(step)
    from_results = service.enhance_reasoning_step_with_sources(
        step, [{"document_id": "doc_9", "score": 0.8, "content": "c", "chunk_index": 4}]
    )

    assert step.source_attributions == []  # the step given is left as it was
    assert [(a.document_id, a.relevance_score) for a in from_context.source_attributions] == [
        ("doc_1", 0.5)
    ]
    assert [(a.document_id, a.relevance_score) for a in from_results.source_attributions] == [
        ("doc_9", 0.4)
    ]


def test_format_sources_for_display_has_exactly_the_documents_shape() -> None:
    steps = [
        _step(1, ("ml_guide_ch1", 0.92), ("ai_intro", 0.5)),
        _step(2, ("dl_paper_2023", 0.87)),
    ]
    steps[0].source_attributions[0].excerpt = "Machine learning algorithms fall into three..."
    service = SourceAttributionService()
    summary = service.aggregate_sources_across_steps(steps)
    summary.all_sources[1].document_title = None

    shown = service.format_sources_for_display(summary)
    hidden = service.format_sources_for_display(summary, include_excerpts=False)

    assert shown == {
        "total_sources": 3,
        "primary_sources": [
            {
                "document_id": "ml_guide_ch1",
                "title": "ML_GUIDE_CH1",
                "relevance": 0.92,
                "excerpt": "Machine learning algorithms fall into three...",
            },
            {
                "document_id": "dl_paper_2023",
                "title": "dl_paper_2023",
                "relevance": 0.87,
                "excerpt": None,
            },
        ],
        "step_breakdown": {
            "step_1": {
                "step_number": 1,
                "sources_used": 2,
                "document_ids": ["ml_guide_ch1", "ai_intro"],
            },
            "step_2": {"step_number": 2, "sources_used": 1, "document_ids": ["dl_paper_2023"]},
        },
    }
    assert all(p["excerpt"] is None for p in hidden["primary_sources"])
