"""The default generator: the answer is made of the retrieved sentences that
best answer the question, quoted verbatim, so every claim is provable.

Candidate sentences are pre-ranked by word overlap with the question and by
their chunk's retrieval score, the best few are embedded (as the question is,
through the embedder's question encoder, batched), and a fitted answer scorer
gives each the probability that it answers; the answer quotes the most likely
one when that probability reaches the abstention threshold, and a further one
only when it is likely enough to add an answer the first may lack.

A form's row or a table's row is one fact of a record (the form on its page, the
table it sits in, a key/value table, a section of "Label: value" lines or list
items): a sentence is read with its record's identifying values, its table's
header and its document and section (``documents.chunk_context``), so "the grand
total of the Batmobile estimate" is answered by the "GRAND TOTAL" row of the page
whose form names the Batmobile; an answer about a named record quotes only that
record.

Modules:

- ``thresholds``: the set (not fitted) numbers, with their reasons;
- ``scripts``: the words a question and a sentence are compared on, in any script;
- ``sentences``: a chunk cut into verbatim candidate sentences and form pairs;
- ``records``: the record, table header and place a sentence is read with;
- ``ranking``: a candidate and its similarity to the question;
- ``answer_types``: the kind of value a question asks for, and who holds one;
- ``features``: what the scorer reads of a candidate;
- ``scorer``: the fitted scorer (``answer_scorer.json``) and its thresholds;
- ``generator``: ``ExtractiveGenerator``, which gathers, scores and selects the quotes;
- ``coverage``: how much of the question a quote or the passages hold (confidence).
"""
