"""A small library for the stepped-answer tests: facts that a question joins from
two different documents, ingested in-process (rolled back with each test) like
tests/citations/llm_support.py does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from citations.llm_apps import app_create
from citations.models import App
from documents.models import File, Organization
from tests import factories
from tests.citations.llm_support import ingest

LEAVE = """# Leave Policy

## Annual Leave

Full-time employees receive twenty-five days of annual leave per calendar year.
Annual leave requests must be approved by the line manager two weeks in advance.

## Sick Leave

Employees who are sick must notify their line manager before nine o'clock on the first day.
A medical certificate is required for sick leave longer than three consecutive days.
"""

SECURITY = """# Security Policy

## Passwords

Passwords must be changed every ninety days and must contain at least twelve characters.
Passwords may never be shared with colleagues or written on paper.

## Visitor Badges

Visitor badges must be returned to the reception desk before the visitor leaves the building.
Lost visitor badges are reported to the security desk the same day.
"""

TRAVEL = """# Travel Policy

## Train Travel

Train tickets for journeys longer than four hours may be booked in first class.
"""

LEAVE_FACT = "Full-time employees receive twenty-five days of annual leave per calendar year."
PASSWORD_FACT = (
    "Passwords must be changed every ninety days and must contain at least twelve characters."
)
TWO_FACTS = (
    "How many days of annual leave do full-time employees receive and how often must "
    "passwords be changed?"
)
ONE_FACT = "How often must passwords be changed?"


@dataclass
class StepsLibrary:
    organization: Organization
    key: str
    leave: File
    security: File
    travel: File

    def app(self, generator: str = "extractive", **fields: Any) -> App:
        model = str(fields.pop("model", "test-model" if generator != "extractive" else ""))
        min_score = fields.pop("min_score", None)
        # these tests are about what the model did: its failures fail the question
        model_settings = {"model_fallback": fields.pop("model_fallback", "fail")}
        app = app_create(
            organization=self.organization,
            name=str(fields.pop("name", f"{generator} steps")),
            data_source_names=["Policies"],
            generator=generator,
            model=model,
            reasoning=str(fields.pop("reasoning", "steps")),
            model_settings=model_settings,
            **fields,
        )
        if min_score is not None:  # a retrieval setting, edited as in the admin
            app.min_score = min_score
            app.save(update_fields=["min_score"])
        return app


@pytest.fixture
def steps_library(db: None) -> StepsLibrary:
    org = factories.organization("Initech")
    source = factories.data_source(org, "Policies")
    return StepsLibrary(
        organization=org,
        key=factories.api_key(org),
        leave=ingest(source, "leave-policy.md", LEAVE),
        security=ingest(source, "security-policy.md", SECURITY),
        travel=ingest(source, "travel-policy.md", TRAVEL),
    )
