"""Answers and their evidence (query executions, quoted sources, claim citations)."""
