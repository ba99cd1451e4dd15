"""Write the golden snapshots again: ``.venv/bin/python -m tests.golden.regenerate``.

Run it from the project root after a deliberate change to a converter, then
read ``git diff tests/golden`` as the change users will see before committing
it. ``--check`` writes nothing and exits 1 when a snapshot differs (what
``tests/documents/test_golden.py`` checks). Snapshots of documents no longer in
the corpus are deleted. Needs no database: conversions run in the sandbox child.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.golden.snapshots import (
    SNAPSHOTS,
    corpus_documents,
    snapshot_files_stored,
    snapshots_take,
)


def changes() -> tuple[dict[Path, str], set[Path]]:
    """Snapshot files whose text differs from today's conversions (with that text),
    and stored files no corpus document has any more."""
    taken = snapshots_take(corpus_documents())
    wanted = {path: text for shot in taken for path, text in shot.files().items()}
    changed = {
        path: text
        for path, text in wanted.items()
        if not path.exists() or path.read_bytes() != text.encode("utf-8")
    }
    return changed, snapshot_files_stored() - wanted.keys()


def write(changed: dict[Path, str], stale: set[Path]) -> None:
    """Bytes as converted (no newline translation); emptied folders removed."""
    for path, text in changed.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    for path in stale:
        path.unlink()
    for folder in sorted((p for p in SNAPSHOTS.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    args = parser.parse_args(argv)
    started = time.monotonic()
    changed, stale = changes()
    for path in sorted(changed):
        print(f"{'differs' if path.exists() else 'new'}: {path.relative_to(SNAPSHOTS)}")
    for path in sorted(stale):
        print(f"stale: {path.relative_to(SNAPSHOTS)}")
    if not args.check:
        write(changed, stale)
    seconds = time.monotonic() - started
    print(f"{len(changed)} changed, {len(stale)} stale, in {seconds:.1f} s", file=sys.stderr)
    return 1 if args.check and (changed or stale) else 0


if __name__ == "__main__":
    sys.exit(main())
