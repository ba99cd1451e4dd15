"""documents/data_sources.py: the one way a data source is made (REST, ``ingest``,
``setup_demo``), named, found by id or name, and deleted only while it never held
a file."""

from __future__ import annotations

import pytest

from documents.data_sources import (
    DataSourceRejected,
    data_source_create,
    data_source_ensure,
    data_source_rename,
    data_sources_named,
)
from documents.models import DataSource
from retrieval.services import vector_database_default
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_new_data_source_is_indexed_in_its_organizations_default_database() -> None:
    org = factories.organization()
    source = data_source_create(organization=org, name="  Human Resources\n")
    assert source.name == "Human Resources"
    assert source.vector_database == vector_database_default(organization=org)


@pytest.mark.parametrize(
    ("name", "words"),
    [("", "needs a name"), ("  ", "needs a name"), ("x" * 201, "at most 200"), ("a\x00b", "NUL")],
)
def test_a_name_that_cannot_be_one_is_refused(name: str, words: str) -> None:
    with pytest.raises(DataSourceRejected, match=words) as refused:
        data_source_create(organization=factories.organization(), name=name)
    assert (refused.value.code, refused.value.param) == ("invalid_name", "name")
    assert not DataSource.objects.exists()


def test_ensure_finds_or_makes_and_a_taken_name_is_a_conflict() -> None:
    org = factories.organization()
    made, created = data_source_ensure(organization=org, name="HR")
    assert created
    assert data_source_ensure(organization=org, name="HR") == (made, False)
    with pytest.raises(DataSourceRejected) as taken:
        data_source_create(organization=org, name="HR")
    assert (taken.value.code, taken.value.status) == ("data_source_exists", 409)
    other = data_source_create(organization=org, name="Legal")
    with pytest.raises(DataSourceRejected):
        data_source_rename(data_source=other, name=" HR ")
    other.refresh_from_db()
    assert other.name == "Legal"


def test_data_sources_are_named_by_id_or_name_in_order_once_each() -> None:
    org = factories.organization("Acme")
    hr, legal = factories.data_source(org, "HR"), factories.data_source(org, "Legal")
    theirs = factories.data_source(factories.organization("Globex"), "Secret")
    found = data_sources_named(organization=org, refs=["Legal", str(hr.pk), "HR"])
    assert found == [legal, hr]
    with pytest.raises(DataSourceRejected) as unknown:
        data_sources_named(organization=org, refs=["HR", str(theirs.pk), "Secret"])
    assert unknown.value.code == "unknown_data_source"
    assert unknown.value.message.endswith(f"'{theirs.pk}', 'Secret'")
