"""``ExtractiveGenerator``: gathers a question's candidate sentences, ranks them
and composes the answer from the best, each quoted once."""

from __future__ import annotations

from collections.abc import Sequence

from citations.generators import Claim, Passage
from citations.generators.extractive.ranking import (
    Sentence,
    covers,
    similarities,
    similarity_floor,
)
from citations.generators.extractive.records import Layout
from citations.generators.extractive.scripts import stems, word_count
from citations.generators.extractive.sentences import sentence_spans, similarity_floor_of
from citations.generators.extractive.thresholds import (
    CANDIDATES_TO_EMBED,
    LEXICAL_WEIGHT,
    MIN_PAIR_SIMILARITY,
    MIN_SIMILARITY,
    MIN_WORDS,
    PRIOR_WEIGHT,
    RELATIVE_FLOOR,
)


class ExtractiveGenerator:
    name = "extractive"

    def __init__(
        self,
        *,
        max_sentences: int = 3,
        threshold: float = 0.35,
        min_similarity: float = MIN_SIMILARITY,
    ) -> None:
        self.max_sentences = max_sentences
        self.threshold = threshold
        self.min_similarity = min_similarity

    def generate(
        self, *, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> list[Claim]:
        candidates = self._candidates(question, passages)
        if any(c.names for c in candidates):  # the question names a record: others are out
            candidates = [c for c in candidates if c.names or not c.record]
        if not candidates:
            return []
        similarity = similarities(question, question_vector, candidates)
        scored = [
            (c, sim + LEXICAL_WEIGHT * c.overlap + PRIOR_WEIGHT * c.prior)
            for c, sim in zip(candidates, similarity, strict=True)
            if sim >= max(self.min_similarity, similarity_floor(c)) and covers(c)
        ]
        if any(c.asks for c, _ in scored):  # the field asked for beats the record's name
            scored = [(c, score) for c, score in scored if c.asks]
        scored.sort(key=lambda pair: (-pair[1], pair[0].passage, pair[0].start))
        return self._select(scored)

    def _candidates(self, question: str, passages: Sequence[Passage]) -> list[Sentence]:
        asked = stems(question)
        found: list[Sentence] = []
        for passage in passages:
            layout = Layout(passage)
            for start, end, pair in sentence_spans(passage.text):
                text = passage.text[start:end]
                reading = layout.read(asked, start, end)
                floor = (
                    MIN_PAIR_SIMILARITY if pair else similarity_floor_of(passage.text, start, text)
                )
                found.append(
                    Sentence(
                        passage.index,
                        start,
                        end,
                        text,
                        reading.overlap,
                        passage.score_norm,
                        floor,
                        reading.record,
                        reading.names,
                        reading.asks,
                        reading.holds_field,
                    )
                )
        found.sort(key=lambda s: (-(s.overlap + 0.5 * s.prior), s.passage, s.start))
        return found[:CANDIDATES_TO_EMBED]

    def _select(self, ranked: list[tuple[Sentence, float]]) -> list[Claim]:
        claims: list[Claim] = []
        seen: set[str] = set()
        floor = max(self.threshold, ranked[0][1] * RELATIVE_FLOOR) if ranked else self.threshold
        named = ranked[0][0] if ranked and ranked[0][0].names else None
        for sentence, score in ranked:
            if score < floor or len(claims) >= self.max_sentences:
                break
            if named is not None and sentence.record != named.record:
                continue  # the question names a record: the answer quotes that one only
            reply = " ".join(sentence.text.split())
            if any(_repeats(reply.lower(), said) for said in seen) or any(
                claim.passage == sentence.passage
                and claim.source_start < sentence.end
                and sentence.start < claim.source_end
                for claim in claims
            ):  # a form row and its own pair are one fact, quoted once
                continue
            seen.add(reply.lower())
            claims.append(Claim(sentence.passage, sentence.start, sentence.end, reply, score))
        return claims


def _repeats(reply: str, said: str) -> bool:
    """Overlapping chunks repeat sentences, sometimes with a neighbour's words before
    them ("Note This is a preliminary estimate …" and "This is a preliminary …"): the
    same text, or a sentence of MIN_WORDS+ words that ends the other after a space.
    Short texts must be equal: "Total | 100" is not "Sub Total | 100"'s repeat."""
    if reply == said:
        return True
    shorter, longer = sorted((reply, said), key=len)
    return word_count(shorter) >= MIN_WORDS and longer.endswith(" " + shorter)
