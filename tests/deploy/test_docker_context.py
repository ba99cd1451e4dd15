"""The image's build context (``.dockerignore``): the source goes to the daemon,
the virtualenv, the embedded database's data and uploaded files (``var/``) and
the git history do not. Docker cannot run on every machine the suite runs on, so
the rules are applied here as Docker applies them (a pattern that matches a
folder leaves out all of it; ``**/`` matches any depth, the top included)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BULK = (".venv", "var", ".git", ".env")  # bulk, or secrets
CONTEXT_LIMIT = 20 * 1024 * 1024  # the source and its docs; the virtualenv alone is GBs


def ignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``path`` (relative, with ``/``) out of the context: a
    pattern matches it or one of its folders."""
    if any(pattern.startswith("!") for pattern in patterns):
        raise AssertionError("exceptions (!) are not used: keep the rules simple")
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return any(_regex(p).fullmatch(prefix) for p in patterns for prefix in prefixes)


def _regex(pattern: str) -> re.Pattern[str]:
    """Go's filepath.Match with Docker's ``**``: ``*`` and ``?`` stay within a folder."""
    escaped = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
    return re.compile(escaped.replace(r"\?", "[^/]"))


def context_files(patterns: list[str]) -> list[Path]:
    kept = []
    for folder, folders, files in os.walk(ROOT):
        relative = Path(folder).relative_to(ROOT).as_posix()
        relative = "" if relative == "." else relative + "/"
        folders[:] = [f for f in folders if not ignored(relative + f, patterns)]
        kept += [Path(folder) / f for f in files if not ignored(relative + f, patterns)]
    return kept


def test_the_rules_match_as_docker_matches() -> None:
    patterns = ["var", "**/__pycache__", "*.egg-info", "bench/results/cache"]
    assert ignored("var/pgdata/base/1", patterns)
    assert ignored("__pycache__/x.pyc", patterns) and ignored("a/b/__pycache__/x.pyc", patterns)
    assert ignored("provenance.egg-info/PKG-INFO", patterns)
    assert ignored("bench/results/cache/x.npy", patterns)
    assert not ignored("bench/results/latest.md", patterns)
    assert not ignored("documents/var.py", patterns) and not ignored("a/var/x", patterns)


def test_the_context_is_the_source_without_bulk() -> None:
    patterns = ignore_patterns()
    for name in BULK:
        assert ignored(name, patterns), f"{name} would be sent into the image"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    tracked = [path for path in tracked if path]
    assert tracked
    left_out = [path for path in tracked if ignored(path, patterns)]
    assert left_out == [], f"tracked files the image would lack: {left_out[:5]}"
    # what the Dockerfile copies before the rest
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for source in line.split()[1:-1]:
                if source != ".":
                    assert (ROOT / source).exists() and not ignored(source, patterns), source
    size = sum(path.stat().st_size for path in context_files(patterns) if path.is_file())
    assert size < CONTEXT_LIMIT, f"a {size / 2**20:.0f} MiB context"


def test_the_images_build_step_runs_with_its_own_settings(tmp_path: Path) -> None:
    """The Dockerfile's collectstatic, with the image's ENV and the step's own
    variables (production settings refuse a short audit key: the build would fail)."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    env = dict(os.environ)
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in line.split()[1:]:
                name, _, value = pair.partition("=")
                env[name] = value
    step = next(line for line in text.splitlines() if "collectstatic" in line)
    command = step.split("&&")[-1].split()
    while "=" in command[0]:
        name, value = command.pop(0).split("=", 1)
        env[name] = value
    assert command[:3] == ["python", "manage.py", "collectstatic"], command
    env.update(PROVENANCE_VAR_DIR=str(tmp_path), PROVENANCE_MEDIA_ROOT=str(tmp_path / "media"))
    done = subprocess.run(
        [sys.executable, *command[1:]], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert any((tmp_path / "static").rglob("*.css"))


def _run_words(dockerfile: str, command: str) -> set[str]:
    """The arguments the Dockerfile's RUN steps pass to ``command`` (each use, up to
    the next ``&&``)."""
    words: set[str] = set()
    for step in dockerfile.replace("\\\n", " ").splitlines():
        if step.startswith("RUN "):
            for part in step[4:].split("&&"):
                tokens = part.split()
                if tokens[:1] == [command]:
                    words.update(t for t in tokens[1:] if not t.startswith("-"))
    return words


def test_every_named_volume_mounts_on_a_folder_the_runtime_user_owns() -> None:
    """A new named volume takes the ownership of the image's folder it mounts on, or
    root's where the image has none; the application runs as a non-root user, so
    uploads into a root-owned ``/data/media`` failed (PermissionError) the first time
    the stack ran under Docker."""
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    named = set(compose["volumes"])
    targets = {
        mount.split(":")[1]
        for service in compose["services"].values()
        if service.get("image") == "provenance:latest"
        for mount in service.get("volumes", [])
        if mount.split(":")[0] in named
    }
    assert targets >= {"/data/media", "/heads"}, targets
    dockerfile = (ROOT / "Dockerfile").read_text()
    user = next(line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER "))
    made, owned = _run_words(dockerfile, "mkdir"), _run_words(dockerfile, "chown")
    assert user in owned, "the runtime user owns what chown names"
    for target in sorted(targets):
        assert target in made, f"{target}: not made in the image"
        assert target in owned, f"{target}: not owned by {user}"
