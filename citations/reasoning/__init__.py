"""Answers worked through in steps (an app's ``reasoning = steps``): decomposing a
question into sub-questions, answering each with its own retrieval and sources, and
the cot-source-attribution document's attribution service. See docs/steps.md."""
