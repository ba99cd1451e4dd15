"""Operator scripts (the docker smoke is also imported by the deploy tests)."""
