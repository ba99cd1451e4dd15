"""Answering questions and keeping the record of every answer, by concept.

- ``questions``: what a question must be (``question_clean``, ``QueryRejected``);
- ``searching``: one answer's retrieval (``Searcher``) and its hits as passages;
- ``execution``: ``query_execute``, which answers a question and records it;
- ``evidence``: the rows an answer writes and chains in one transaction;
- ``abandoning``: failing an answer once, and the stale-answer sweep;
- ``revalidation``: ``query_validate``, a stored answer checked against the live index.

``query_execute`` is re-exported here: it is the app's entry point, imported by
most tests and surfaces.
"""

from citations.services.execution import query_execute

__all__ = ["query_execute"]
