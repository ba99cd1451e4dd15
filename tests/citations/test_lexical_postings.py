"""The full-text index: weight-ordered postings kept by a trigger on the chunk table,
and BM25 ranking over them, checked against BM25 computed here from the chunks'
own tsvectors."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from citations.models import App
from documents.fulltext import SCRIPT_BOUNDARY
from documents.models import Chunk, Organization
from retrieval import search
from retrieval.models import LexicalPosting
from tests import factories
from tests.citations.conftest import Library

# BM25 as the migration defines it, written out again here
K1, B, AVERAGE_POSITIONS = 1.2, 0.75, 80.0

QUESTIONS = [
    "Which NFL team represented the AFC at Super Bowl 50?",
    "Where did the Normans come from?",
    "What is the paid leave policy for new employees?",
    "Who was the Norse leader who founded Normandy?",
    "How many days of parental leave are there?",
    "What does the Amazon rainforest cover?",
]


def _tsvector_terms(chunk_ids: list[uuid.UUID] | None = None) -> dict[uuid.UUID, dict[str, int]]:
    """{chunk id: {lexeme: positions}} of the retrievable chunks, read from search_vector."""
    terms: dict[uuid.UUID, dict[str, int]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, t.lexeme, coalesce(array_length(t.positions, 1), 1)"
            " FROM documents_chunk c, unnest(c.search_vector) AS t"
            " WHERE c.is_retrievable AND (%s::uuid[] IS NULL OR c.id = ANY(%s::uuid[]))",
            [chunk_ids, chunk_ids],
        )
        for chunk_id, lexeme, tf in cursor.fetchall():
            terms[chunk_id][lexeme] = tf
    return terms


def _weight(tf: int, length: int) -> float:
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * max(length, 1) / AVERAGE_POSITIONS))


def _postings(chunk_ids: list[uuid.UUID]) -> dict[tuple[uuid.UUID, str], float]:
    return {
        (p.chunk_id, p.lexeme): p.weight
        for p in LexicalPosting.objects.filter(chunk_id__in=chunk_ids)
    }


def _lexical(
    library: Library, question: str, *, apps: list[App] | None = None, **overrides: object
) -> list[tuple[uuid.UUID, float]]:
    source_ids = [
        pk
        for app in apps or [library.squad]
        for pk in app.data_sources.values_list("pk", flat=True)
    ]
    params = search.statement_params(
        organization_id=library.organization.pk,
        data_source_ids=source_ids,
        question=question,
        candidate_k=40,
        top_k=10,
        analyzer="english",
    )
    ranking = search.lexical_params(params)
    if ranking is None:
        return []
    rows = search._rows(search._LEXICAL_SQL, ranking | overrides, configure=False)
    return [(row[0], row[1]) for row in rows]


@pytest.mark.django_db
def test_every_retrievable_chunk_has_the_postings_of_its_tsvector(library: Library) -> None:
    """One posting per lexeme of each retrievable chunk, none for any other chunk,
    each with the chunk's data source and its BM25 term weight."""
    terms = _tsvector_terms()
    assert len(terms) > 100
    expected = {
        (chunk_id, lexeme): _weight(tf, sum(lexemes.values()))
        for chunk_id, lexemes in terms.items()
        for lexeme, tf in lexemes.items()
    }
    stored = {(p.chunk_id, p.lexeme): p for p in LexicalPosting.objects.all()}
    assert stored.keys() == expected.keys()
    for key, weight in expected.items():
        assert stored[key].weight == pytest.approx(weight, rel=1e-9)
    sources = dict(Chunk.objects.filter(is_retrievable=True).values_list("id", "data_source_id"))
    assert all(p.data_source_id == sources[p.chunk_id] for p in stored.values())


@pytest.mark.django_db
def test_postings_follow_every_change_of_a_chunk(library: Library) -> None:
    """Becoming retrievable, ceasing to be, a new text, deletion and TRUNCATE: the
    trigger keeps the postings equal to the retrievable chunks' lexemes."""
    template = Chunk.objects.filter(is_retrievable=True).first()
    assert template is not None
    hidden = factories.chunk_like(template, "Zebras graze quietly.", 20_000, is_retrievable=False)
    assert _postings([hidden.pk]) == {}

    Chunk.objects.filter(pk=hidden.pk).update(is_retrievable=True)
    assert {lexeme for _, lexeme in _postings([hidden.pk])} == {"zebra", "graze", "quiet"}

    Chunk.objects.filter(pk=hidden.pk).update(chunk_text="Giraffes browse acacias.")
    assert {lexeme for _, lexeme in _postings([hidden.pk])} == {"giraff", "brows", "acacia"}

    Chunk.objects.filter(pk=hidden.pk).update(is_retrievable=False)
    assert _postings([hidden.pk]) == {}

    shown = factories.chunk_like(template, "Okapis hide in forests.", 20_001, is_retrievable=True)
    assert {lexeme for _, lexeme in _postings([shown.pk])} == {"okapi", "hide", "forest"}
    Chunk.objects.filter(pk=shown.pk).delete()
    assert _postings([shown.pk]) == {}

    assert LexicalPosting.objects.exists()
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending
        for table in ("documents_chunk", "documents_location"):  # as the owner could
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_no_truncate")
        cursor.execute("TRUNCATE documents_chunk CASCADE")
    assert not LexicalPosting.objects.exists()


def _bm25(words: list[str], terms: dict, frequency: dict, size: float) -> list:
    scores = {
        chunk_id: sum(
            _weight(lexemes[w], sum(lexemes.values()))
            * math.log((size + 1) / (min(frequency[w], size) + 0.5))
            for w in words
            if w in lexemes
        )
        for chunk_id, lexemes in terms.items()
        if any(w in lexemes for w in words)
    }
    return sorted(scores.items(), key=lambda item: (-item[1], str(item[0])))[:40]


def _question_words(question: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(to_tsvector('english', regexp_replace(%s, %s, ' ', 'g')))",
            [question, SCRIPT_BOUNDARY],
        )
        return cursor.fetchone()[0]


def _source_terms(apps: list[App]) -> tuple[dict, dict]:
    source_ids = [pk for app in apps for pk in app.data_sources.values_list("pk", flat=True)]
    in_sources = set(
        Chunk.objects.filter(data_source_id__in=source_ids, is_retrievable=True).values_list(
            "id", flat=True
        )
    )
    terms = {k: v for k, v in _tsvector_terms().items() if k in in_sources}
    frequency: dict[str, int] = defaultdict(int)
    for lexemes in terms.values():
        for lexeme in lexemes:
            frequency[lexeme] += 1
    return terms, frequency


@pytest.mark.django_db
@pytest.mark.parametrize("app_names", [["squad"], ["squad", "handbook"]])
def test_the_full_text_side_is_bm25_over_the_postings(
    library: Library, app_names: list[str]
) -> None:
    """With every posting read, the statement's top-40 and scores are BM25 computed
    here from the tsvectors, over one source or two; with the per-word bound,
    nearly the same chunks."""
    apps = [getattr(library, name) for name in app_names]
    terms, frequency = _source_terms(apps)
    overlaps = []
    for question in QUESTIONS:
        expected = _bm25(_question_words(question), terms, frequency, len(terms))
        exact = _lexical(library, question, apps=apps, per_word=10**9)
        assert [c for c, _ in exact] == [c for c, _ in expected], question
        assert [s for _, s in exact] == pytest.approx([s for _, s in expected], rel=1e-9)
        bounded = {c for c, _ in _lexical(library, question, apps=apps)}
        overlaps.append(len(bounded & {c for c, _ in expected}) / len(expected))
    assert sum(overlaps) / len(overlaps) >= 0.9, overlaps


@pytest.mark.django_db
def test_past_the_counting_cap_the_document_frequency_is_analyzes_share(library: Library) -> None:
    """A word whose chunks are counted up to the cap takes ANALYZE's share of N, if
    larger; the count where the share is smaller or unknown."""
    terms, frequency = _source_terms([library.squad])
    question, common = max(
        ((q, w) for q in QUESTIONS for w in _question_words(q)), key=lambda qw: frequency[qw[1]]
    )
    words = _question_words(question)
    assert frequency[common] > 5
    share = 0.5
    size = len(terms)
    estimated = dict(frequency)
    for w in words:
        if frequency[w] >= 5:  # counted up to the cap of 5, then the share if larger
            estimated[w] = max(5, share * size) if w == common else 5
    found = _lexical(
        library,
        question,
        per_word=3,
        count_cap=5,
        rescored=10**6,
        estimated_words=[common],
        estimated_shares=[share],
    )
    # every posting of every word still reached the candidates through the rescoring
    expected = _bm25(words, terms, estimated, size)
    scores = dict(found)
    for chunk_id, score in expected:
        if chunk_id in scores:
            assert scores[chunk_id] == pytest.approx(score, rel=1e-9)
    assert len(set(scores) & {c for c, _ in expected}) >= 10


@pytest.mark.django_db
def test_the_best_matches_are_found_not_the_first(library: Library) -> None:
    """A word in more chunks than one index range reads: the chunk that holds it
    most densely is found, however late it was written."""
    template = Chunk.objects.filter(
        data_source__in=library.squad.data_sources.all(), is_retrievable=True
    ).first()
    assert template is not None
    filler = " ".join(["the river delta floods every spring season"] * 12)
    for n in range(search.PER_WORD_POSTINGS + 50):
        factories.chunk_like(template, f"{filler} zqxmarker {n}", 30_000 + n, is_retrievable=True)
    dense = factories.chunk_like(
        template, "zqxmarker zqxmarker zqxmarker", 40_000, is_retrievable=True
    )
    found = _lexical(library, "Where is the zqxmarker?")
    assert found[0][0] == dense.pk
    assert len(found) == 40


@pytest.mark.django_db
def test_bm25_counts_a_small_source_afresh(library: Library) -> None:
    """N, the chunks of the app's sources, is cached only where counting costs: a
    source queried while small sees its new chunks at once."""
    template = Chunk.objects.filter(data_source__in=library.squad.data_sources.all()).first()
    assert template is not None
    before = search.retrievable_chunks([template.data_source_id])
    assert before < search.CACHED_SIZE_MINIMUM
    factories.chunk_like(template, "Tapirs swim well.", 60_000, is_retrievable=True)
    assert search.retrievable_chunks([template.data_source_id]) == before + 1


@pytest.mark.django_db
def test_another_sources_postings_are_never_candidates(library: Library) -> None:
    """The statement reads only the app's data sources."""
    other = Chunk.objects.filter(data_source__in=library.handbook.data_sources.all()).first()
    assert other is not None
    factories.chunk_like(
        other, "zqyunique appears in the handbook only", 50_000, is_retrievable=True
    )
    assert _lexical(library, "zqyunique") == []


@pytest.mark.django_db
def test_equal_weights_are_cut_by_chunk_id_every_time(library: Library) -> None:
    """Among chunks of equal weight the smallest ids make the cut, before and after
    their postings are rewritten: retrieval does not depend on physical order."""
    template = Chunk.objects.filter(
        data_source__in=library.squad.data_sources.all(), is_retrievable=True
    ).first()
    assert template is not None
    chunks = [
        factories.chunk_like(
            template, "the zqtie grows by the water", 70_000 + n, is_retrievable=True
        )
        for n in range(search.PER_WORD_POSTINGS + 30)
    ]
    expected = sorted((c.pk for c in chunks), key=str)[:40]
    assert [c for c, _ in _lexical(library, "zqtie")] == expected
    Chunk.objects.filter(pk__in=expected).update(is_retrievable=False)
    Chunk.objects.filter(pk__in=expected).update(is_retrievable=True)  # written again, last
    assert [c for c, _ in _lexical(library, "zqtie")] == expected


@pytest.mark.django_db
def test_a_posting_of_another_organizations_chunk_is_never_returned(library: Library) -> None:
    """Even a posting filed under the app's data source: the chunk's organization decides."""
    template = Chunk.objects.filter(
        data_source__in=library.squad.data_sources.all(), is_retrievable=True
    ).first()
    assert template is not None
    other = Organization.objects.create(name=f"Other {uuid.uuid4().hex[:6]}")
    stray = factories.chunk_like(
        template, "zqstray belongs elsewhere", 80_000, is_retrievable=True, organization_id=other.pk
    )
    assert Chunk.objects.get(pk=stray.pk).organization_id == other.pk
    assert LexicalPosting.objects.filter(chunk_id=stray.pk).exists()
    assert _lexical(library, "zqstray") == []


@pytest.mark.django_db
def test_the_first_words_of_a_long_question_are_kept(library: Library) -> None:
    """Past ``MAX_QUERY_WORDS`` lexemes the question's first words count, not the
    alphabetically first."""
    template = Chunk.objects.filter(
        data_source__in=library.squad.data_sources.all(), is_retrievable=True
    ).first()
    assert template is not None
    wanted = factories.chunk_like(template, "zzqfirst", 90_000, is_retrievable=True)
    filler = " ".join(f"aa{chr(97 + n // 26)}{chr(97 + n % 26)}word" for n in range(80))
    assert _lexical(library, f"zzqfirst {filler}")[0][0] == wanted.pk


@pytest.mark.django_db
def test_rebuild_postings_finds_and_mends_any_difference(library: Library) -> None:
    """``rebuild_postings --check`` fails on missing, changed and stray postings;
    ``rebuild_postings`` restores exactly what the triggers maintain."""
    call_command("rebuild_postings", "--check")
    before = {
        (p.chunk_id, p.lexeme): (p.data_source_id, p.weight) for p in LexicalPosting.objects.all()
    }
    first = LexicalPosting.objects.order_by("chunk_id", "lexeme").first()
    assert first is not None
    with connection.cursor() as cursor:  # as a data-only restore or a replica could leave them
        cursor.execute("ALTER TABLE documents_chunk DISABLE TRIGGER USER")
        cursor.execute("DELETE FROM retrieval_lexicalposting WHERE chunk_id = %s", [first.chunk_id])
        cursor.execute(
            "UPDATE retrieval_lexicalposting SET weight = weight + 1"
            " WHERE chunk_id = (SELECT max(chunk_id::text)::uuid FROM retrieval_lexicalposting)"
        )
        cursor.execute(
            "UPDATE documents_chunk SET is_retrievable = false WHERE id ="
            " (SELECT min(chunk_id::text)::uuid FROM retrieval_lexicalposting)"
        )
        cursor.execute("ALTER TABLE documents_chunk ENABLE TRIGGER USER")
    with pytest.raises(CommandError, match=r"[1-9]\d* postings missing .* [1-9]\d* stray"):
        call_command("rebuild_postings", "--check")
    call_command("rebuild_postings")
    call_command("rebuild_postings", "--check")
    hidden = set(
        Chunk.objects.filter(is_retrievable=False, pk__in={k[0] for k in before}).values_list(
            "pk", flat=True
        )
    )
    assert hidden  # the chunk made unretrievable above
    after = {
        (p.chunk_id, p.lexeme): (p.data_source_id, p.weight) for p in LexicalPosting.objects.all()
    }
    assert after == {k: v for k, v in before.items() if k[0] not in hidden}


def _arabic_line_with_python(corpus: Path) -> str:
    """A line of the corpus's Arabic PDF, as converted, where "Python" follows the
    Arabic "و" (and) with no space: the PDF itself sets none."""
    from documents.converters import converter_for

    pdf = (corpus / "docling/pdf/right_to_left_01.pdf").read_bytes()
    markdown = converter_for("pdf").convert(pdf).markdown
    return next(line for line in markdown.splitlines() if "\u0648Python" in line)


@pytest.mark.django_db
def test_latin_words_against_unspaced_scripts_are_words_of_their_own(
    library: Library, corpus: Path
) -> None:
    """ "وPython", "使用Python进行" and "Python을" hold the word "Python": a search for
    it finds them, and a question written that way finds an English "Python"; the
    chunk text stays exactly the Markdown slice."""
    template = Chunk.objects.filter(
        data_source__in=library.squad.data_sources.all(), is_retrievable=True
    ).first()
    assert template is not None
    texts = [
        _arabic_line_with_python(corpus),
        "我们使用Python进行数据分析。",
        "데이터 분석에는 Python을 사용합니다.",
        "הספרייה כתובה בשפתPython ובשפת C.",
    ]
    chunks = [
        factories.chunk_like(template, text, 70_000 + n, is_retrievable=True)
        for n, text in enumerate(texts)
    ]
    found = {chunk_id for chunk_id, _ in _lexical(library, "Python")}
    assert {c.pk for c in chunks} <= found
    for chunk, text in zip(chunks, texts, strict=True):
        chunk.refresh_from_db()
        assert chunk.chunk_text == text
        assert "python" in _tsvector_terms([chunk.pk])[chunk.pk]
    english = factories.chunk_like(
        template, "Pythonesque zqwscript Python tooling", 70_100, is_retrievable=True
    )
    ranked = [chunk_id for chunk_id, _ in _lexical(library, "ما هو وzqwscript؟")]
    assert ranked[0] == english.pk


@pytest.mark.django_db
def test_text_without_a_script_boundary_is_indexed_as_before(library: Library) -> None:
    """Words within one script (accented Latin, Arabic with its vowel signs, kanji
    with 々 or 〇) are lexemes exactly as Postgres's parser makes them on the plain
    text."""
    template = Chunk.objects.filter(data_source__in=library.squad.data_sources.all()).first()
    assert template is not None
    texts = [
        "Le café naïve déjà vu, R2-D2 and x86_64.",
        "يمكن أن يؤدي أيضًا إلى اتخاذ قرارات أكثر دقة بناءً على البيانات",
        "データ分析 and 数据 are written apart.",
        "時々 and 二〇二四年 stay whole, and so does Py\ufeffthon.",
    ]
    for n, text in enumerate(texts):
        chunk = factories.chunk_like(template, text, 71_000 + n, is_retrievable=True)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT search_vector = to_tsvector('english', %s) FROM documents_chunk"
                " WHERE id = %s",
                [text, chunk.pk],
            )
            assert cursor.fetchone() == (True,), text
