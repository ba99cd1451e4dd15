"""The default generator: the answer is made of the retrieved sentences that
best answer the question, quoted verbatim, so every claim is provable.

Candidate sentences are pre-ranked by word overlap with the question and by
their chunk's retrieval score, the best few are embedded (as the question is,
through the embedder's question encoder, batched), and those closest to the
question (above a relevance floor) form the answer.

A form's row or a table's row is one fact of a record (the form on its page, the
table it sits in): a sentence is read with its record's identifying values, its
table's header and its document and section (``documents.chunk_context``), so
"the grand total of the Batmobile estimate" is answered by the "GRAND TOTAL" row
of the page whose form names the Batmobile. A sentence that shares with the
question only the record's name ("Model | Batmobile") is no answer when another
holds the field asked for, and an answer about a named record quotes only that
record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import regex

from citations.generators import Claim, Passage
from documents.chunk_context import (
    RecordAnchor,
    TableSpan,
    cells,
    context_parse,
    label_value,
    record_anchors,
    tables_of,
)
from documents.fulltext import words
from documents.markdown_structure import MarkdownStructure
from retrieval.embedders import default_embedder

_BLOCK_SPLIT = re.compile(r"\n\s*\n")
# Arabic "؟" and Urdu "۔" end sentences too; Chinese and Japanese full stops
# ("。", "！", "？", fullwidth and halfwidth ones) end one with no space after them:
# after the last of a run ("？！"), with any closing quotes or brackets that follow
_CJK_STOPS = "\u3002\uff01\uff1f\uff0e\uff61"
_CJK_CLOSERS = "\u300d\u300f\u3011\u300b\u3009\uff09\u201d\u2019\uff63"
_SENTENCE_END = re.compile(
    r"(?<=[.!?\u061f\u06d4])[\"')\]]*\s+"
    rf"|(?<=[{_CJK_STOPS}])(?![{_CJK_STOPS}0-9\uff10-\uff19])[\"')\]{_CJK_CLOSERS}]*\s*"
)
# Chinese and Japanese write words without spaces: a run of these is many words
_HAN_AND_KANA = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\u30fc]+")
_HIRAGANA = regex.compile(r"\p{Hiragana}+")
_LEAD = re.compile(r"(?:\s*(?:[-*+>]|\d{1,3}[.)])\s+|\s*\|?\s*)")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
        "did",
        "many",
        "much",
    ]
)
MIN_WORDS = 4
# a sentence this unlike the question in meaning is no answer, whatever word it shares
# ("What is the Globex launch code?" is not answered by "... source code and the VPN.":
# cosine 0.17); on the SQuAD set it costs 7 of 1802 answering passages, 0.4 %
MIN_SIMILARITY = 0.25
# a table row is short and shares a word easily ("| | Color | White" for "What color is
# the sky on Mars?": cosine 0.37; "Austria | 8.9 | … | Vienna" for a Berlin office: 0.34),
# so it must be closer in meaning to count; rows that answer scored 0.44-0.68 on the
# corpus tables
MIN_ROW_SIMILARITY = 0.40
# a short "**key**: value" line of a JSON file (fewer than MIN_WORDS words) or a
# "label | value" pair of a form is quoted only this close: "**provider**: MediCare
# Plus" answers "Who is the health benefits provider?" at 0.65 and "Make | Jeep"
# "Which make is the car?" at 0.54, while "**color**: white" scores 0.42 and "Color |
# White" 0.44 for the sky on Mars
MIN_PAIR_SIMILARITY = 0.45
_KEY_VALUE = re.compile(r"\s*(?:[-*+]\s+)?\*\*[^*\n]+\*\*:\s+\S")
CANDIDATES_TO_EMBED = 20
# a further sentence must be nearly as relevant as the best one, or it is noise
RELATIVE_FLOOR = 0.65
# a short form (a table row, a form's pair, a "key: value" line) shares a word easily:
# it is quoted only if it, its record, its table's header, its document and section
# hold at least this share of the question's words ("Home office | 30" holds one of
# "office dress code")
MIN_FORM_COVERAGE = 0.5
# relevance = cosine(question, sentence) + these shares of word overlap and chunk score
LEXICAL_WEIGHT = 0.6
PRIOR_WEIGHT = 0.05


@dataclass(frozen=True)
class _Sentence:
    passage: int
    start: int
    end: int
    text: str
    overlap: float
    prior: float
    floor: float  # the similarity to the question it needs to be quoted
    record: tuple[str, ...] = ()  # the identifying values of the record it sits in
    names: frozenset[str] = frozenset()  # the question's words that name that record
    asks: bool = True  # it is not a sentence that only names its record
    holds_field: bool = True  # it holds a question word that does not name its record


@dataclass(frozen=True)
class _Reading:
    """How one sentence relates to the question, its record taken into account."""

    overlap: float  # share of the question's words it, its record or its place holds
    record: tuple[str, ...]
    names: frozenset[str]
    asks: bool
    holds_field: bool
    field_share: float  # share of the question's words but the record's name it holds


class _Layout:
    """The records and table headers of one passage: each sentence belongs to the
    last form before it in the passage, else to the record of the chunk's context;
    a row of a headed table has that header's words (its field names)."""

    def __init__(self, passage: Passage) -> None:
        self.text = passage.text
        self.context = context_parse(passage.context)
        self.tables: list[TableSpan] = tables_of(self.text) if "|" in self.text else []
        self.anchors: list[RecordAnchor] = record_anchors(self.text, self.tables)
        self.place = (
            _words(passage.title) | _words(self.context.document) | _words(self.context.section)
        )

    def record(self, start: int) -> tuple[str, ...]:
        before = [a for a in self.anchors if a.char_start <= start]
        return before[-1].values if before else self.context.record

    def header(self, start: int, line: str) -> str:
        for table in self.tables:
            if table.char_start <= start < table.char_end:
                below = start >= table.char_start + len(table.header)
                return table.header if below and not table.is_form else ""
        return self.context.columns if _is_table_row(line) else ""

    def line(self, start: int) -> str:
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", start)
        return self.text[line_start : line_end if line_end >= 0 else len(self.text)]

    def read(self, asked: set[str], start: int, end: int) -> _Reading:
        """The sentence's words, its record's and its place's against the question's.

        A record's value names it ("Grand Cherokee"), a label never does ("GRAND
        TOTAL" of the Jeep's estimate is a field). A row of a headed table outside
        any form is a record of its own ("Honda | Civic | 2HGF…" in a fleet
        register): its cells name it and its header holds the fields; under a form
        (an estimate's totals) a row is one of the form's fields.
        """
        line = self.line(start)
        sentence, header = self.text[start:end], self.header(start, line)
        record = self.record(start)
        if header and not record:
            record = tuple(cells(line))
            own, names = _words(header), frozenset(asked & _words(line))
        else:
            own = _words(sentence) | _words(header)
            names = frozenset(asked & (_words(" ".join(record)) - _words(_label(sentence))))
        covered = asked & (own | names | self.place)
        held = asked & own
        return _Reading(
            overlap=len(covered) / (len(asked) or 1),
            record=record,
            names=names,
            asks=not held or bool(held - names),
            holds_field=bool(held - names),
            field_share=len((held | (asked & self.place)) - names) / (len(asked - names) or 1),
        )


def _words(text: str) -> set[str]:
    """What a question and a sentence are compared on: word stems, and the
    character pairs of Chinese and Japanese runs (their words are not delimited).
    Pairs of hiragana only are left out: they are mostly endings and particles
    ("です", "ます"), the stop words of Japanese."""
    found: set[str] = set()
    for word in words(text):
        word = word.lower()
        if _HAN_AND_KANA.fullmatch(word):
            pairs = (word[n : n + 2] for n in range(max(1, len(word) - 1)))
            found.update(pair for pair in pairs if not _HIRAGANA.fullmatch(pair))
        elif word not in _STOP:
            found.add(word[:6])
    return found


def _word_count(text: str) -> int:
    """Words for the length floor; a Chinese or Japanese run counts two words per
    three characters (their words average one and a half), rounded up."""
    return sum(
        -(-2 * len(word) // 3) if _HAN_AND_KANA.fullmatch(word) else 1 for word in words(text)
    )


def _is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _is_structural(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("#") or set(stripped) <= set("|-: ")


_CELL_BORDER = re.compile(r"(?<!\\)\|")
_LETTER = regex.compile(r"\p{L}")


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cells of the table row ``text[start:end]`` as stripped spans (an empty
    cell is an empty span), without the outer pipes' empty pieces."""
    borders = [m.start() for m in _CELL_BORDER.finditer(text, start, end)]
    edges = [start - 1, *borders, end]
    cells = []
    for left, right in zip(edges, edges[1:], strict=False):
        a, b = left + 1, right
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        cells.append((a, b))
    if borders and not text[start : borders[0]].strip():
        cells = cells[1:]
    if borders and not text[borders[-1] + 1 : end].strip():
        cells = cells[:-1]
    return cells


def _form_rows(text: str) -> set[int]:
    """Offsets of the body rows of tables whose header row is blank: a form (PDF
    and DOCX layout tables), where each row holds "label | value" pairs."""
    structure = MarkdownStructure(text)
    rows: set[int] = set()
    for block in structure.blocks:
        first = structure.line_of(block.char_start)
        header = text[block.char_start : structure.line_end(first)]
        if block.kind == "table" and not header.replace("|", "").strip():
            last = structure.line_of(block.char_end)
            rows.update(structure.line_starts[line - 1] for line in range(first + 2, last + 1))
    return rows


def _pairs(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """A form row's "label | value" spans, or None if the row is not cut so: an odd
    number of cells, fewer than four, or a label without a letter ("2021 | 10.2 |
    11.4 | 12.0" is a data row of a table converted without its header)."""
    cells = _cells(text, start, end)
    if len(cells) < 4 or len(cells) % 2:
        return None
    pairs = [
        (label, value)
        for label, value in zip(cells[::2], cells[1::2], strict=True)
        if label[1] > label[0] and value[1] > value[0]
    ]
    if not pairs or any(not _LETTER.search(text, label[0], label[1]) for label, _ in pairs):
        return None
    return [(label[0], value[1]) for label, value in pairs]


def _form_pairs(text: str) -> dict[int, list[tuple[int, int]]]:
    """The rows of ``text`` that are cut into "label | value" pairs, by offset."""
    found = {}
    for row in _form_rows(text) if "|" in text else ():
        pairs = _pairs(text, row, len(text) if (end := text.find("\n", row)) < 0 else end)
        if pairs is not None:
            found[row] = pairs
    return found


def sentences_of(text: str) -> list[tuple[int, int]]:
    """Verbatim sentence spans of a chunk, headings and table rulers skipped.

    A row of a form (a table with a blank header row, four or more cells, labels
    with letters) also yields its "label | value" pairs: "Email | … | VIN | 1C4R…"
    mixes two facts, and each pair is much closer in meaning to the question it
    answers (0.64 against 0.38 for "What is the VIN of the vehicle?"). The whole
    row stays a candidate: a table whose header the converter could not tell is
    converted with a blank header row too.
    """
    return [(start, end) for start, end, _pair in _sentences(text)]


def _sentences(text: str) -> list[tuple[int, int, bool]]:
    """:func:`sentences_of`'s spans, each saying whether it is a form's pair."""
    spans: list[tuple[int, int, bool]] = []
    pairs = _form_pairs(text)
    for line_match in re.finditer(r"[^\n]+", text):
        if _is_structural(line_match.group()):
            continue
        line, offset = line_match.group(), line_match.start()
        spans += [(a, b, True) for a, b in pairs.get(offset, ()) if _word_count(text[a:b]) >= 2]
        cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(line)] + [len(line)]
        for piece_start, piece_end in zip(cuts, cuts[1:], strict=False):
            start, end = offset + piece_start, offset + piece_end
            lead = _LEAD.match(text, start, end)
            start = lead.end() if lead else start
            while end > start and text[end - 1] in " |\t":
                end -= 1
            short_form = _is_table_row(line) or _is_key_value(line)
            if _word_count(text[start:end]) >= (2 if short_form else MIN_WORDS):
                spans.append((start, end, False))
    return spans


def _label(sentence: str) -> str:
    """The label of a row, a pair or a "Label: value" line (its first cell, or the
    text before the colon); "" for prose."""
    if "|" in sentence:
        return cells(sentence)[0]
    pair = label_value(sentence)
    return pair[0] if pair else ""


def _is_key_value(line: str) -> bool:
    """A "**key**: value" line of a JSON file, or a form's short "Label: value" line."""
    return bool(_KEY_VALUE.match(line)) or label_value(line) is not None


def _floor(chunk: str, start: int, sentence: str) -> float:
    """The similarity a sentence needs: more for the short forms that share a word
    easily (a table row, a short key/value line) than for prose."""
    line_start = chunk.rfind("\n", 0, start) + 1
    line_end = chunk.find("\n", start)
    line = chunk[line_start : line_end if line_end >= 0 else len(chunk)]
    if _is_table_row(line):
        return MIN_ROW_SIMILARITY
    if _is_key_value(line) and _word_count(sentence) < MIN_WORDS:
        return MIN_PAIR_SIMILARITY
    return 0.0


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
        similarity = _similarities(question, question_vector, candidates)
        scored = [
            (c, sim + LEXICAL_WEIGHT * c.overlap + PRIOR_WEIGHT * c.prior)
            for c, sim in zip(candidates, similarity, strict=True)
            if sim >= max(self.min_similarity, _similarity_floor(c)) and _covers(c)
        ]
        if any(c.asks for c, _ in scored):  # the field asked for beats the record's name
            scored = [(c, score) for c, score in scored if c.asks]
        scored.sort(key=lambda pair: (-pair[1], pair[0].passage, pair[0].start))
        return self._select(scored)

    def _candidates(self, question: str, passages: Sequence[Passage]) -> list[_Sentence]:
        asked = _words(question)
        found: list[_Sentence] = []
        for passage in passages:
            layout = _Layout(passage)
            for start, end, pair in _sentences(passage.text):
                text = passage.text[start:end]
                reading = layout.read(asked, start, end)
                floor = MIN_PAIR_SIMILARITY if pair else _floor(passage.text, start, text)
                found.append(
                    _Sentence(
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

    def _select(self, ranked: list[tuple[_Sentence, float]]) -> list[Claim]:
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


def _covers(sentence: _Sentence) -> bool:
    """A short form sharing a word or two with the question is a near miss, however
    close in meaning ("Home office | 30" for the office dress code), and so is one
    that holds none of the question's words but its record's name ("VIN | …" for the
    tire pressure of a named car); prose is not held to this (a sentence answers in
    words of its own)."""
    if sentence.names and not sentence.holds_field:
        return False  # of the record the question names, but not the field it asks
    return not sentence.floor or (sentence.overlap >= MIN_FORM_COVERAGE and sentence.holds_field)


def _similarity_floor(sentence: _Sentence) -> float:
    """A short form needs to be closer in meaning than prose, as it shares words
    easily; not once it holds the field asked in the record the question names (the
    words then say more than the cosine of a few cells)."""
    return 0.0 if sentence.names and sentence.holds_field else sentence.floor


def _similarities(
    question: str, question_vector: Sequence[float], candidates: Sequence[_Sentence]
) -> list[float]:
    """Each candidate's cosine with the question; for a sentence of a record the
    question names, the better of that and its cosine with the question without
    the record's name ("VIN | 1C4R…" is far from "What is the VIN of the Jeep Grand
    Cherokee?" but close to "What is the VIN of the"): the name is matched by the
    record, the rest by the sentence."""
    fields = sorted({_without(question, c.names) for c in candidates if c.names})
    texts = [c.text for c in candidates] + fields
    vectors = np.asarray(default_embedder().embed_sentences(texts))
    similarity = vectors[: len(candidates)] @ np.asarray(question_vector)
    by_field = dict(zip(fields, vectors[len(candidates) :], strict=True))
    return [
        max(float(sim), float(by_field[_without(question, c.names)] @ vectors[n]))
        if c.names
        else float(sim)
        for n, (c, sim) in enumerate(zip(candidates, similarity, strict=True))
    ]


def _without(question: str, names: frozenset[str]) -> str:
    """The question without the words that name a record (compared as _words does)."""
    return " ".join(w for w in words(question) if not (_words(w) and _words(w) <= names))


def _repeats(reply: str, said: str) -> bool:
    """Overlapping chunks repeat sentences, sometimes with a neighbour's words before
    them ("Note This is a preliminary estimate …" and "This is a preliminary …"): the
    same text, or a sentence of MIN_WORDS+ words that ends the other after a space.
    Short texts must be equal: "Total | 100" is not "Sub Total | 100"'s repeat."""
    if reply == said:
        return True
    shorter, longer = sorted((reply, said), key=len)
    return _word_count(shorter) >= MIN_WORDS and longer.endswith(" " + shorter)


@dataclass(frozen=True)
class Coverage:
    """How much of a question a quote holds, read with its record and place."""

    share: float  # of the question's words
    field_share: float  # of the question's words but those naming the quote's record
    missing: list[str]  # the question's words it lacks, as the question writes them


def question_coverage(question: str, passage: Passage, start: int, end: int) -> Coverage:
    """How much of the question ``passage.text[start:end]`` holds, read with its
    record, its table's header, its document and section."""
    asked = _words(question)
    layout = _Layout(passage)
    reading = layout.read(asked, start, end)
    header = layout.header(start, layout.line(start))
    covered = _words(passage.text[start:end]) | _words(header) | reading.names | layout.place
    return Coverage(reading.overlap, reading.field_share, _missing(question, covered))


def words_missing(question: str, passages: Sequence[Passage]) -> list[str]:
    """The question's words that no passage (its text, record or place) holds."""
    held: set[str] = set()
    for passage in passages:
        held |= _words(passage.text) | _words(passage.title) | _words(passage.context)
    return _missing(question, held)


def _missing(question: str, held: set[str]) -> list[str]:
    missing: list[str] = []
    for word in words(question):
        stems = _words(word)
        if stems and not stems <= held and word not in missing:
            missing.append(word)
    return missing
