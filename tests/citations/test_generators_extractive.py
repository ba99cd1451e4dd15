"""The extractive generator reads other scripts as search does: "وPython" holds
the word "Python", "؟" ends a sentence, and so do Chinese and Japanese full stops."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from citations.generators import Passage
from citations.generators.extractive.generator import ExtractiveGenerator
from citations.generators.extractive.scripts import stems as _words
from citations.generators.extractive.sentences import sentences_of
from citations.generators.extractive.thresholds import CANDIDATES_TO_EMBED
from documents.converters import converter_for
from documents.fulltext import SCRIPT_BOUNDARY, words
from retrieval.embedders import default_embedder


def _arabic_sentences(corpus: Path) -> list[str]:
    """The corpus's Arabic PDF, as converted, cut at its sentence ends."""
    pdf = (corpus / "docling/pdf/right_to_left_01.pdf").read_bytes()
    markdown = converter_for("pdf").convert(pdf).markdown
    return [markdown[start:end] for start, end in sentences_of(markdown)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        "بلغة R وPython، 使用Python进行 Python을 x86_64",
        "كَتَبَ الوَلَدُ الدَّرْسَ بناءً على البيانات",
        "ที่นี่ประเทศไทย and קָרָא, then cafe\u0301 au lait",
    ],
)
def test_words_split_where_the_database_splits_them(text: str) -> None:
    """The generator's words are the tokens Postgres's parser makes of the text
    once script boundaries are spaced: marks stay inside their word."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT array_agg(token ORDER BY n) FROM ts_parse('default',"
            " regexp_replace(%s, %s, ' ', 'g')) WITH ORDINALITY AS t(tokid, token, n)"
            " WHERE tokid <> 12",  # 12: blank
            [text, SCRIPT_BOUNDARY],
        )
        (tokens,) = cursor.fetchone()
    assert words(text) == tokens


def test_an_arabic_question_mark_ends_a_sentence() -> None:
    text = "ما هي مكتبة pandas في البرمجة؟ يمكن استخدام مكتبة pandas لإدارة البيانات."
    assert [text[s:e] for s, e in sentences_of(text)] == [
        "ما هي مكتبة pandas في البرمجة؟",
        "يمكن استخدام مكتبة pandas لإدارة البيانات.",
    ]


def test_a_latin_word_against_arabic_letters_counts_as_asked(corpus: Path) -> None:
    """Only sentences sharing the question's words are embedded when there are
    many: the PDF's sentence naming Python only as "وPython" is one of them, and
    the answer quotes it."""
    sentences = _arabic_sentences(corpus)
    attached = [s for s in sentences if "\u0648Python" in s and " Python" not in s]
    others = [s for s in sentences if "Python" not in s]
    assert attached and others
    crowd = CANDIDATES_TO_EMBED + 5
    texts = [others[n % len(others)] for n in range(crowd)] + attached[:1]
    passages = [Passage(index=n, text=text, score_norm=0.5) for n, text in enumerate(texts)]
    question = "Python"
    # what is under test is which sentences become candidates, so no abstention:
    # the English model scores this Arabic sentence low against the one word "Python"
    generator = ExtractiveGenerator(max_sentences=1, threshold=0.0)
    claims = generator.generate(
        question=question,
        question_vector=default_embedder().embed_query(question),
        passages=passages,
    )
    assert [c.passage for c in claims] == [crowd]


CHINESE = (
    "机器学习是人工智能的一个重要分支。它使计算机能够从大量数据中自动学习规律。"
    "深度学习使用多层神经网络来提取特征。"
)


def test_chinese_and_japanese_sentences_end_at_their_full_stops() -> None:
    """ "。", "！" and "？" end a sentence with no space after them; a run of Han or
    kana counts as words by its length, so such sentences are not dropped as short."""
    assert [CHINESE[s:e] for s, e in sentences_of(CHINESE)] == [
        "机器学习是人工智能的一个重要分支。",
        "它使计算机能够从大量数据中自动学习规律。",
        "深度学习使用多层神经网络来提取特征。",
    ]
    japanese = "東京は日本の首都であり政治の中心です。人口は約千四百万人に達しています！"
    assert [japanese[s:e] for s, e in sentences_of(japanese)] == [
        "東京は日本の首都であり政治の中心です。",
        "人口は約千四百万人に達しています！",
    ]


def test_short_chinese_sentences_run_of_stops_and_closing_marks() -> None:
    """A seven-character sentence is a sentence; "？！" ends one sentence, not two;
    closing marks stay with the sentence they close; a fullwidth stop between
    digits is a decimal point."""
    text = (
        "会议在三点开始。这个结果真的正确吗？！他说：“明天再来。”"
        "《报告》第３．５节已经更新｡下一句话在这里。"
    )
    assert [text[s:e] for s, e in sentences_of(text)] == [
        "会议在三点开始。",
        "这个结果真的正确吗？！",
        "他说：“明天再来。”",
        "《报告》第３．５节已经更新｡",
        "下一句话在这里。",
    ]


def test_a_chinese_question_is_answered_from_the_sentence_sharing_its_words() -> None:
    """Han runs are compared by their character pairs: the question's "机器学习" is held
    by the Chinese sentences, not the English invoice, and the sentence that holds it
    is among the two the scorer finds most likely (which of two relevant sentences
    answers is the scorer's call; it prefers longer ones, as SQuAD's answers are)."""
    passages = [
        Passage(index=0, text="# 简介\n\n" + CHINESE, score_norm=0.6),
        Passage(index=1, text="The invoice is due within thirty days of receipt.", score_norm=0.5),
    ]
    question = "什么是机器学习？"
    vector = default_embedder().embed_query(question)
    generator = ExtractiveGenerator(max_sentences=1)
    claims = generator.generate(question=question, question_vector=vector, passages=passages)
    assert [c.passage for c in claims] == [0]
    ranked = generator.rank(question, vector, passages)
    assert "机器学习是人工智能的一个重要分支。" in [s.text for s, _ in ranked[:2]]
    assert ranked[-1][0].passage == 1


def test_japanese_endings_alone_do_not_make_a_sentence_relevant() -> None:
    """Sentences that share only a "です" ending share no words; a shared noun counts."""
    assert not _words("この作業は大事です。") & _words("その手順は簡単です。")
    assert {"首都"} <= _words("日本の首都はどこですか？") & _words(
        "東京は日本の首都であり政治の中心です。"
    )
