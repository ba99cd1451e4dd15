"""Documents and helpers shared by the conversational API tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citations.llm_apps import app_create
from citations.models import App
from documents.demo import demo_documents_write
from documents.models import File, Organization
from tests import factories
from tests.conftest import wait_for_status

SURVEILLANCE = """# Video Surveillance Policy

## Scope

Cameras watch the entrances, the parking garage and the server room of every Acme office.
The security desk operates the surveillance cameras around the clock, and nobody may install
a new camera without written approval from the facilities manager. Footage is never used to
measure the performance of employees, and signs at every entrance tell visitors that the
premises are filmed.

## Retention Period

The retention period for camera recordings is thirty days, after which the recordings are
overwritten automatically unless an incident investigation requires a longer hold.
Copies exported for the police are logged by the security desk, and the data protection
officer checks every quarter that no recording older than the limit is still stored on
the recorders, the backup disks or the laptops of the security staff.
"""

CONTRACTS = """# Customer Contract Policy

## Scope

Every agreement signed with a customer is covered, including order forms, statements of work,
renewals and amendments. Sales negotiates the commercial terms, the legal team reviews every
customer contract before signature, and only the chief financial officer may sign contracts
above one million euros. Signed originals are stored in the contract management system.

## Retention Period

The retention period for signed customer contracts is ten years after the contract ends,
because tax auditors and courts may ask for them during that time.
When the period is over, the legal team deletes the electronic copy from the contract
management system and shreds the paper original, and the deletion is recorded in the
register of processing activities together with the name of the person who approved it.
"""


@dataclass
class Tenant:
    organization: Organization
    key: str
    app: App
    files: dict[str, File]


def tenant_with(name: str, documents: dict[str, bytes], *, data_source: str = "Policies") -> Tenant:
    """An organization whose documents are ingested by the real worker, an app over
    them and an API key; the caller needs ``celery_worker`` and a transactional test."""
    org = factories.organization(name)
    source = factories.data_source(org, data_source)
    uploads = {n: factories.upload(source, n, data).file for n, data in documents.items()}
    files = {n: wait_for_status(f.pk, timeout=300) for n, f in uploads.items()}
    assert all(f.status == "ready" for f in files.values()), files
    app = app_create(organization=org, name=f"{name} assistant", data_source_names=[data_source])
    return Tenant(org, factories.api_key(org), app, files)


def security_policy_pdf(folder: Path) -> bytes:
    """The demo security policy: page 3 says incidents are reported within one hour."""
    paths = {p.name: p for p in demo_documents_write(folder)}
    return paths["security-policy.pdf"].read_bytes()


def demo_handbook(folder: Path) -> bytes:
    paths = {p.name: p for p in demo_documents_write(folder)}
    return paths["employee-handbook.md"].read_bytes()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Http:
    """Raw HTTP against the live server (stdlib only, so nothing hides the wire)."""

    def __init__(self, base_url: str, key: str | None) -> None:
        self.base_url, self.key = base_url, key

    def __call__(self, method: str, path: str, body: object = None, **headers: str) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Reply(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers), error.read())

    def get(self, path: str, **headers: str) -> Reply:
        return self("GET", path, **headers)

    def post(self, path: str, body: object = None, **headers: str) -> Reply:
        return self("POST", path, {} if body is None else body, **headers)
