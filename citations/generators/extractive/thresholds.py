"""The extractive generator's set numbers, named once each with their reason.

What decides whether a candidate answers (and how sure the answer is) is fitted:
the answer scorer's weights and thresholds live in ``answer_scorer.json`` with the
report of the data they were fitted and tested on (``manage.py train_answer_scorer``).
What is left here is set, not fitted.
"""

from __future__ import annotations

# a prose sentence shorter than this is a fragment (a caption, a heading's echo), not
# a claim; a row, a pair or a "Label: value" line needs two words
MIN_WORDS = 4
# the sentences embedded for an answer: those sharing the most of the question's words
# (its record's and its place's included), then of the best-scored chunks. Embedding
# them is most of an ask's time where vectors are fp32; on 1,000 SQuAD v1.1 dev
# questions over the 100k-chunk bench set, 10 instead of 20 kept the first quote of
# 984 answers and held the gold text in 880 answers instead of 871, in 75 instead of
# 132 ms of generation (fp32, AVX2)
CANDIDATES_TO_EMBED = 10
