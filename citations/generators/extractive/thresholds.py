"""The extractive generator's tuned thresholds and weights, named once each."""

from __future__ import annotations

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
# the sentences embedded for an answer: those sharing the most of the question's words
# (its record's and its place's included), then of the best-scored chunks. Embedding
# them is most of an ask's time where vectors are fp32; on 1,000 SQuAD v1.1 dev
# questions over the 100k-chunk bench set, 10 instead of 20 kept the first quote of
# 984 answers and held the gold text in 880 answers instead of 871, in 75 instead of
# 132 ms of generation (fp32, AVX2)
CANDIDATES_TO_EMBED = 10
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
