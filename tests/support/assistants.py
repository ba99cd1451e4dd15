"""Reading the Assistants objects of the official ``openai`` client."""

from __future__ import annotations

from collections.abc import Sequence

from openai.types.beta.threads import FileCitationAnnotation, Message, Text, TextContentBlock


def text_of(message: Message, block: int = 0) -> Text:
    """The text of a message's content ``block``: the answer, then its source tracing."""
    content = message.content[block]
    assert isinstance(content, TextContentBlock), content
    return content.text


def metadata_of(message: Message) -> dict[str, str]:
    assert message.metadata is not None, message
    return message.metadata


def file_citations(annotations: Sequence[object]) -> list[FileCitationAnnotation]:
    """The annotations, each a ``file_citation``."""
    citations = [a for a in annotations if isinstance(a, FileCitationAnnotation)]
    assert len(citations) == len(annotations), annotations
    return citations


def quote_of(annotation: FileCitationAnnotation) -> str:
    """The quoted sentence: a field the server adds to ``file_citation``, kept as an extra."""
    quote = (annotation.file_citation.model_extra or {}).get("quote")
    assert isinstance(quote, str), annotation
    return quote
