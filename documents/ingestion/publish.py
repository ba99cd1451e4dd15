"""Publishing a conversion: its Markdown made active, older revisions superseded
and retrievability set, under row locks taken newest revision first."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from documents.ingestion.status import ready_on
from documents.leases import Lease
from documents.models import Chunk, DocumentMarkdown, File
from documents.seals import revision_seal


@transaction.atomic
def publish(lease: Lease, markdown: DocumentMarkdown) -> bool:
    """Make the new Markdown the active one and supersede older revisions; False
    (nothing published) if the file was cancelled, deleted or taken over."""
    from retrieval.services import chunks_retrievable_set

    file_id = lease.file_id
    now = timezone.now()
    document = File.objects.values("data_source_id", "name", "revision").get(pk=file_id)
    # this revision and every older one, locked newest first as file_delete locks them:
    # two revisions published at once then wait for each other instead of each
    # holding an older row the other one needs (a deadlock)
    locked = list(
        File.objects.select_for_update()
        .filter(
            data_source_id=document["data_source_id"],
            name=document["name"],
            revision__lte=document["revision"],
        )
        .order_by("-revision")
    )
    record, older = locked[0], [revision.pk for revision in locked[1:]]  # revisions are unique
    if record.lease_owner != lease.token:
        return False
    DocumentMarkdown.objects.filter(file=record, is_active=True).update(is_active=False)
    # published once: a rollback to an earlier conversion makes it active again, and
    # its publication time and seal stay what they were (both are write-once)
    DocumentMarkdown.objects.filter(pk=markdown.pk).update(is_active=True)
    DocumentMarkdown.objects.filter(pk=markdown.pk, published_at__isnull=True).update(
        published_at=now
    )
    revision_seal(DocumentMarkdown.objects.select_related("file").get(pk=markdown.pk))
    File.objects.filter(pk__in=older, superseded_at__isnull=True).update(superseded_at=now)
    chunks_retrievable_set(
        Chunk.objects.filter(file__in=[record.pk, *older]).exclude(markdown=markdown),
        retrievable=False,
    )
    if record.deleted_at is None and record.superseded_at is None:
        # a revision converted again after a newer one was published stays hidden
        chunks_retrievable_set(Chunk.objects.filter(markdown=markdown), retrievable=True)
    # ready_at says when this revision first became ready, not when it was converted again
    ready_on(lease.rows(), markdown, ready_at=record.ready_at or now)
    return True
