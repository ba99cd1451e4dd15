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

Modules:

- ``thresholds``: every similarity floor, coverage share and ranking weight;
- ``scripts``: the words a question and a sentence are compared on, in any script;
- ``sentences``: a chunk cut into verbatim candidate sentences and form pairs;
- ``records``: the record, table header and place a sentence is read with;
- ``ranking``: a candidate's similarity to the question and the floors it must pass;
- ``generator``: ``ExtractiveGenerator``, which gathers, ranks and selects the quotes;
- ``coverage``: how much of the question a quote or the passages hold (confidence).
"""
