"""Every module a process imports at its start has bytecode on disk.

Where ``PYTHONDONTWRITEBYTECODE`` is set (containers, CI sandboxes) Python never
writes a ``.pyc``, so a module without one is compiled from source at each start
of each process: a worker's or web process's imports took ~4 s instead of ~2 s,
a cold conversion child's ~0.9 s instead of ~0.3 s. ``make install`` compiles the
virtualenv, ``make bytecode`` (run by ``make test``, ``make run`` and ``make
bench``) the project, and the Dockerfile both.
"""

from __future__ import annotations

import tomllib

from tests.support.child_python import ROOT, child_json

# what a worker process imports before its first task, and a conversion child's parser
_WORKER_START = """
import importlib.util, json, os, sys
import django
django.setup()
import provenance_site.celery, documents.tasks, retrieval.embedders, rest_framework
from documents.converters import converter_for
converter_for("pdf")

def stale(module):
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or ""
    if not origin.endswith(".py") or not spec.cached:
        return None
    try:
        header = open(spec.cached, "rb").read(16)
    except OSError:
        return "missing"
    stat = os.stat(origin)
    if header[:4] != importlib.util.MAGIC_NUMBER:
        return "other Python"
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:  # hash-based: checked against the source's hash when imported
        return None
    mtime, size = (int.from_bytes(header[i:i + 4], "little") for i in (8, 12))
    if (mtime, size) != (int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF):
        return "out of date"
    return None

# what make install and make bytecode write: the virtualenv's modules and the project's
# (the interpreter's own standard library is its installer's)
ours = (os.path.join(sys.prefix, ""), os.path.join(os.getcwd(), ""))
checked, bad = [], []
for name, module in list(sys.modules.items()):
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    if origin.endswith(".py") and origin.startswith(ours):
        checked.append(origin)
        problem = stale(module)
        if problem:
            bad.append(f"{name}: {problem}")
print(json.dumps({"checked": checked, "bad": bad}))
"""


def test_a_worker_process_compiles_nothing_at_its_start() -> None:
    result, _ = child_json(_WORKER_START, {"PYTHONDONTWRITEBYTECODE": "1"})
    checked = result["checked"]
    assert checked, "no module was checked"
    # the virtualenv's packages and the project's modules are both among them
    assert any("site-packages/django/" in path for path in checked)
    assert any("site-packages/pymupdf/" in path for path in checked)
    assert any(path.startswith(str(ROOT / "documents")) for path in checked)
    assert result["bad"] == [], (
        f"{len(result['bad'])} of {len(checked)} modules would be compiled at every start "
        f"(make install compiles the virtualenv, make bytecode the project): {result['bad'][:10]}"
    )


def _packages() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in include}
    assert packages and all(packages), include
    return packages


def test_the_image_and_make_compile_every_installed_package() -> None:
    """A package added to pyproject.toml is compiled in the image and by ``make``."""
    dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    compiled: set[str] = set()
    for step in dockerfile.splitlines():
        for part in step.removeprefix("RUN ").split("&&"):
            words = part.split()
            if words[:3] == ["python", "-m", "compileall"]:
                compiled.update(w for w in words[3:] if not w.startswith("-"))
    assert _packages() <= compiled, f"the image leaves {_packages() - compiled} uncompiled"
    makefile = (ROOT / "Makefile").read_text()
    line = next(row for row in makefile.splitlines() if row.startswith("SOURCES :="))
    sources = set(line.split(":=", 1)[1].split())
    assert _packages() <= sources, f"make bytecode leaves {_packages() - sources} uncompiled"
    assert all((ROOT / name).is_dir() for name in sources), sources
