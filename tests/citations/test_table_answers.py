"""Answers from tables: a form's row holds several "label | value" facts, and
the answer quotes the one pair that answers, verbatim from the chunk."""

from __future__ import annotations

import pytest

from citations.generators import Passage
from citations.generators.extractive.generator import ExtractiveGenerator
from citations.generators.extractive.ranking import Sentence as _Sentence
from citations.generators.extractive.sentences import sentences_of
from citations.services import query_execute
from tests.citations.conftest import Library

FORM = """\
| ZAVA AUTO REPAIR | |
| --- | --- |
| Customer Information | Vehicle Information |

|  |  |  |  |
| --- | --- | --- | --- |
| Insured name | Gabriel Diaz | Year | 2022 |
| Email | gabriel@contoso.com | VIN | 1C4RJFBG2NC123456 |
|  |  | Color | White |
| Phone |  | Trim | Limited |
| R\\|D code | 7 | Odd | row | here |

|  |  |  |  |
| --- | --- | --- | --- |
| 2021 | 10.2 | 11.4 | 12.0 |

| Liquid | Melting point | Boiling point | Density |
| --- | --- | --- | --- |
| Ethanol | -114 | 78 | 0.789 |
"""


def _sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentences_of(text)]


def test_a_form_row_offers_its_label_value_pairs_and_itself() -> None:
    assert _sentences(FORM) == [
        "ZAVA AUTO REPAIR",
        "Customer Information | Vehicle Information",  # a two-cell row stays whole
        "Insured name | Gabriel Diaz",
        "Year | 2022",
        "Insured name | Gabriel Diaz | Year | 2022",  # the row stays a candidate
        "Email | gabriel@contoso.com",
        "VIN | 1C4RJFBG2NC123456",
        "Email | gabriel@contoso.com | VIN | 1C4RJFBG2NC123456",
        "Color | White",  # the empty pair is left out
        "|  | Color | White",
        "Trim | Limited",  # so is a label without a value
        "Phone |  | Trim | Limited",
        "R\\|D code | 7 | Odd | row | here",  # an escaped pipe is text; five cells: whole
        # a data row under a blank header (a table converted without its header):
        # labels without letters, not a form
        "2021 | 10.2 | 11.4 | 12.0",
        "Liquid | Melting point | Boiling point | Density",  # a headed table: rows whole
        "Ethanol | -114 | 78 | 0.789",
    ]


def test_a_form_whose_header_is_outside_the_chunk_keeps_its_rows_whole() -> None:
    """Without the blank header row in sight, nothing says the row is a form."""
    body = FORM.split("| --- | --- | --- | --- |\n", 1)[1].split("\n\n", 1)[0]
    assert _sentences(body)[0] == "Insured name | Gabriel Diaz | Year | 2022"


def _claims(texts: list[str]) -> list[str]:
    """What ``_select`` keeps of equally relevant sentences, in order, each from a
    passage of its own (any probability may add a quote here: what is under test is
    which repeats are left out)."""
    generator = ExtractiveGenerator(max_sentences=5, further_at=0.0)
    ranked = [
        (_Sentence(n, 0, len(text), text, 1.0, 1.0), 1.0 - n / 100) for n, text in enumerate(texts)
    ]
    return [claim.reply for claim in generator._select(ranked)]


def test_short_pairs_inside_one_another_are_different_facts() -> None:
    facts = ["Sub Total | 1000", "Total | 100", "Amount due | 150.00", "Amount due | 15"]
    assert _claims(facts) == facts


def test_a_row_and_its_own_pair_are_quoted_once() -> None:
    generator = ExtractiveGenerator(further_at=0.0)
    start = FORM.index("Insured name")
    pair_end = FORM.index(" | Year")
    row_end = FORM.index(" |\n", pair_end)
    ranked = [
        (_Sentence(0, start, pair_end, FORM[start:pair_end], 1.0, 1.0, kind="pair"), 0.9),
        (_Sentence(0, start, row_end, FORM[start:row_end], 1.0, 1.0, kind="row"), 0.85),
    ]
    assert [c.reply for c in generator._select(ranked)] == ["Insured name | Gabriel Diaz"]


def test_a_sentence_repeated_inside_a_longer_one_is_quoted_once() -> None:
    assert _claims(
        [
            "This is a preliminary estimate for the visible damage of the vehicle.",
            "Note This is a preliminary estimate for the visible damage of the vehicle.",
            "this is a PRELIMINARY estimate for the visible  damage of the vehicle.",
            "Parts prices may vary.",
        ]
    ) == [
        "This is a preliminary estimate for the visible damage of the vehicle.",
        "Parts prices may vary.",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("question", "pairs"),
    [
        ("What is the VIN of the vehicle?", ["VIN | 1C4RJFBG2NC123456"]),
        ("What is the policy number?", ["Policy # | POL-2022-555"]),
        ("What color is the vehicle?", ["Color | White"]),
        ("Which make is the car?", ["Make | Jeep"]),
        # a row of the totals table, whose labels stand left of the named columns
        ("How much does the paint labor cost?", ["Paint Labor | 1.5 | 150 | 225"]),
    ],
)
def test_questions_on_a_form_quote_the_pair_that_answers(
    library: Library, question: str, pairs: list[str]
) -> None:
    """The corpus's repair estimate (a PDF of form tables): the answer's claims are
    the pairs, each the exact slice of its chunk at the recorded offsets."""
    execution = query_execute(app=library.estimates, question=question)
    claims = list(execution.claim_citations.select_related("quoted_source"))
    replies = [claim.reply_sentence for claim in claims]
    for pair in pairs:
        assert pair in replies, execution.answer
    for claim in claims:
        chunk_text = claim.quoted_source.chunk_text
        assert chunk_text[claim.source_start : claim.source_end] == claim.source_sentence
        assert execution.answer[claim.reply_start : claim.reply_end] == claim.reply_sentence
    assert replies.index(pairs[0]) == 0, execution.answer  # the answer leads with it
    spans = sorted((c.quoted_source_id, c.source_start, c.source_end) for c in claims)
    for (source_a, _, end_a), (source_b, start_b, _) in zip(spans, spans[1:], strict=False):
        assert source_a != source_b or end_a <= start_b, execution.answer  # no fact twice


def test_passages_of_a_form_offer_pairs_to_the_generator() -> None:
    """The generator's candidates for a form chunk are the pairs (what it embeds)."""
    generator = ExtractiveGenerator()
    candidates = generator._candidates(
        "What is the VIN of the vehicle?", [Passage(index=0, text=FORM, score_norm=1.0)]
    )
    assert "VIN | 1C4RJFBG2NC123456" in [c.text for c in candidates]
    kinds = {c.text: (c.kind, c.label) for c in candidates}
    # a pair is read as a label and its value (the scorer compares the label with the
    # field asked); a whole row of a headed table is a row, its labels the header's
    assert kinds["VIN | 1C4RJFBG2NC123456"] == ("pair", "VIN")
    about_ethanol = generator._candidates(
        "What is the boiling point of ethanol?", [Passage(index=0, text=FORM, score_norm=1.0)]
    )
    rows = {c.text: (c.kind, c.label) for c in about_ethanol}
    assert rows["Ethanol | -114 | 78 | 0.789"] == ("row", "")
