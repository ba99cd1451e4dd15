"""Golden snapshots: what every corpus PDF, DOCX and PPTX converts to, stored.

``snapshots`` makes them, ``regenerate`` writes them, and
``tests/documents/test_golden.py`` compares today's conversions to them
(see docs/conversion.md, "Golden snapshots").
"""
