"""``ExtractiveGenerator``: gathers a question's candidate sentences, ranks them
and composes the answer from the best, each quoted once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citations.generators import Claim, Passage
from citations.generators.extractive.coverage import passages_hold
from citations.generators.extractive.features import feature_rows
from citations.generators.extractive.ranking import Sentence, similarities
from citations.generators.extractive.records import Layout
from citations.generators.extractive.scorer import answer_scorer
from citations.generators.extractive.scripts import stems, word_count
from citations.generators.extractive.sentences import label_in, sentence_kind, sentence_spans
from citations.generators.extractive.thresholds import CANDIDATES_TO_EMBED, MIN_WORDS


@dataclass(frozen=True)
class Extracted:
    claims: list[Claim]
    rerank: dict[int, float]  # passage index -> its best candidate's probability
    probability: float | None  # the most likely candidate's; None: no candidate


class ExtractiveGenerator:
    """Quotes the candidates the answer scorer finds likely to answer: the best one if
    its probability reaches the abstention threshold, then others only as likely as
    ``further_at`` says a second quote must be (it adds an answer the first may lack).
    A claim's relevance is its probability."""

    name = "extractive"

    def __init__(
        self,
        *,
        max_sentences: int = 3,
        threshold: float | None = None,
        further_at: float | None = None,
    ) -> None:
        """``threshold`` and ``further_at``: an app's own abstention threshold and the
        probability a further quote needs, instead of the scorer's fitted ones."""
        self.max_sentences = max_sentences
        self.threshold = threshold
        self.further_at = further_at

    def generate(
        self, *, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> list[Claim]:
        return self._select(self.rank(question, question_vector, passages))

    def extract(
        self, *, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> Extracted:
        """The claims, with each scored passage's best probability (the rerank score of
        its hit) and the answer's probability (its first candidate's)."""
        ranked = self.rank(question, question_vector, passages)
        rerank: dict[int, float] = {}
        for sentence, probability in ranked:
            rerank[sentence.passage] = max(rerank.get(sentence.passage, 0.0), probability)
        return Extracted(self._select(ranked), rerank, ranked[0][1] if ranked else None)

    def rank(
        self, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> list[tuple[Sentence, float]]:
        """The candidates with their probabilities, most likely first."""
        candidates = self._candidates(question, passages)
        if not candidates:
            return []
        similarity, label_similarity = similarities(question, question_vector, candidates)
        rows = feature_rows(question, candidates, similarity, label_similarity, passages)
        ranked = list(zip(candidates, answer_scorer().probabilities(rows), strict=True))
        ranked.sort(key=lambda pair: (-pair[1], pair[0].passage, pair[0].start))
        return ranked

    def _candidates(self, question: str, passages: Sequence[Passage]) -> list[Sentence]:
        asked = stems(question)
        read: list[tuple[Sentence, frozenset[str]]] = []
        for passage in passages:
            layout = Layout(passage)
            for start, end, pair in sentence_spans(passage.text):
                reading = layout.read(asked, start, end)
                kind = "pair" if pair else sentence_kind(passage.text, start, end)
                sentence = Sentence(
                    passage.index,
                    start,
                    end,
                    passage.text[start:end],
                    reading.overlap,
                    passage.score_norm,
                    reading.record,
                    reading.names,
                    reading.asks,
                    reading.holds_field,
                    reading.field_share,
                    kind,
                    label_in(
                        passage.text[start:end],
                        kind,
                        header=layout.header(start, layout.line(start)),
                    ),
                )
                read.append((sentence, reading.covered))
        weights = _rarity(asked, [covered for _, covered in read])
        total = sum(weights.values()) or 1.0
        unasked = bool(asked) and not asked & passages_hold(passages)
        found = [
            replace(s, rare_overlap=sum(weights[w] for w in covered) / total, unasked=unasked)
            for s, covered in read
        ]
        # the sentences holding the most of the question's rare words (their record's
        # and place's included), then of the best-scored chunks, are the ones embedded
        found.sort(key=lambda s: (-(s.rare_overlap + 0.5 * s.prior), s.passage, s.start))
        return found[:CANDIDATES_TO_EMBED]

    def _select(self, ranked: list[tuple[Sentence, float]]) -> list[Claim]:
        scorer = answer_scorer()
        floor = scorer.abstain_below if self.threshold is None else self.threshold
        further = scorer.further_at if self.further_at is None else self.further_at
        if not ranked or ranked[0][1] < floor or ranked[0][0].unasked:
            return []
        first = ranked[0][0]
        claims: list[Claim] = []
        seen: set[str] = set()
        records = {first.record}
        for sentence, probability in ranked:
            if len(claims) >= self.max_sentences or probability < floor:
                break
            if claims and probability < further and not _another_records(first, sentence, records):
                continue
            if first.names and sentence.record != first.record:
                continue  # the question names a record: the answer quotes that one only
            records.add(sentence.record)
            reply = " ".join(sentence.text.split())
            if any(_repeats(reply.lower(), said) for said in seen) or any(
                claim.passage == sentence.passage
                and claim.source_start < sentence.end
                and sentence.start < claim.source_end
                for claim in claims
            ):  # a form row and its own pair are one fact, quoted once
                continue
            seen.add(reply.lower())
            claims.append(Claim(sentence.passage, sentence.start, sentence.end, reply, probability))
        return claims


def _another_records(first: Sentence, sentence: Sentence, quoted: set[tuple[str, ...]]) -> bool:
    """A question that names no record, over a document of several ("What color is
    the vehicle?" of two estimates), is answered by each record's own value of the
    field: the same label in a record not quoted yet."""
    return (
        not first.names
        and bool(first.label)
        and sentence.label.casefold() == first.label.casefold()
        and bool(sentence.record)
        and sentence.record not in quoted
    )


def _rarity(asked: set[str], covered: list[frozenset[str]]) -> dict[str, float]:
    """Each question word's weight: the log of how many candidates there are over how
    many hold it (smoothed), the inverse document frequency among the candidates."""
    count = len(covered)
    return {w: math.log((count + 1) / (1 + sum(w in c for c in covered))) + 1.0 for w in asked}


def _repeats(reply: str, said: str) -> bool:
    """Overlapping chunks repeat sentences, sometimes with a neighbour's words before
    them ("Note This is a preliminary estimate …" and "This is a preliminary …"): the
    same text, or a sentence of MIN_WORDS+ words that ends the other after a space.
    Short texts must be equal: "Total | 100" is not "Sub Total | 100"'s repeat."""
    if reply == said:
        return True
    shorter, longer = sorted((reply, said), key=len)
    return word_count(shorter) >= MIN_WORDS and longer.endswith(" " + shorter)
