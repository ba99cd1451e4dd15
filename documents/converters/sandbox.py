"""Run one conversion in a child process with CPU-time and memory limits.

Parsers of hostile files can hang, balloon or crash; a child process (plain
``subprocess``, because Celery prefork workers are daemonic and may not fork
``multiprocessing`` children) bounds all three and lets the worker survive.
The child imports only the converter registry, never Django.

Child protocol: ``python -m documents.converters.sandbox KIND IN OUT`` reads
the bytes from IN and writes ``{"ok": conversion}`` or ``{"error": reason}``
JSON to OUT. KIND ``pdf-words`` answers a PDF's words page by page instead,
for boxes narrowed at the chunk stage.
"""

from __future__ import annotations

import base64
import json
import os
import resource  # here, not in the forked child: it runs no imports before exec
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from documents.converters.base import Conversion, ConversionError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_MEMORY = "__memory__"
# Test-only fault injection: when this variable is "segv" (or "segv:KIND" for one kind
# of child, e.g. "segv:pdf-words") the child kills itself with SIGSEGV before reading,
# so tests can prove a parser crash is reported, not fatal.
FAULT_ENV = "PROVENANCE_SANDBOX_TEST_FAULT"
PDF_WORDS = "pdf-words"  # not a conversion: the words of every page of a converted PDF
_KIND_NAMES = {
    PDF_WORDS: "PDF",
    "pdf": "PDF",
    "docx": "DOCX",
    "pptx": "PPTX",
    "json": "JSON",
    "html": "HTML",
}


def _limits(memory_mb: int, cpu_s: int):
    def apply() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def convert_isolated(
    data: bytes, kind: str, *, timeout_s: float = 120, memory_mb: int = 2048
) -> Conversion:
    """Convert in a child process; any failure is a ``ConversionError`` with a readable reason."""
    return Conversion.from_json(_run_child(data, kind, timeout_s=timeout_s, memory_mb=memory_mb))


def pdf_words_isolated(data: bytes, *, timeout_s: float = 120, memory_mb: int = 2048) -> bytes:
    """Every page's words (``get_text('words')`` with the converter's flags), read in
    a child process under the same limits as a conversion and packed there
    (``word_boxes.words_pack``: kept as they are between ingestion stages, unpacked
    where used). Any failure is a ``ConversionError``."""
    packed = _run_child(data, PDF_WORDS, timeout_s=timeout_s, memory_mb=memory_mb)
    return base64.b64decode(packed)


def _run_child(data: bytes, kind: str, *, timeout_s: float, memory_mb: int) -> object:
    """What the child answered as ``ok``; its error, limit or crash as ``ConversionError``."""
    timeout_text = f"{timeout_s:g}"
    with tempfile.TemporaryDirectory(prefix="convert-") as tmp:
        src, out = Path(tmp) / "input", Path(tmp) / "output.json"
        src.write_bytes(data)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
        env["PYTHONPATH"] = str(PROJECT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["OMP_NUM_THREADS"] = "1"
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "documents.converters.sandbox", kind, str(src), str(out)],
                cwd=PROJECT_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=timeout_s,
                preexec_fn=_limits(memory_mb, max(1, int(timeout_s) + 1)),
            )
        except subprocess.TimeoutExpired as exc:  # run() has already killed the child
            raise ConversionError(
                f"conversion took longer than {timeout_text} s and was stopped", permanent=False
            ) from exc
        stderr = proc.stderr.decode("utf-8", errors="replace")
        result = None
        if out.exists() and out.stat().st_size:
            try:
                result = json.loads(out.read_text("utf-8"))
            except ValueError:
                result = None
    if result is not None and "ok" in result:
        return result["ok"]
    memory = f"conversion needed more than {memory_mb} MB of memory"
    if result is not None and "error" in result:
        if result["error"] == _MEMORY:
            raise ConversionError(memory, permanent=False)
        raise ConversionError(result["error"], permanent=result.get("permanent", True))
    code = proc.returncode
    if code == -signal.SIGXCPU:
        raise ConversionError(
            f"conversion took longer than {timeout_text} s and was stopped", permanent=False
        )
    if code == -signal.SIGKILL or any(
        m in stderr for m in ("MemoryError", "bad_alloc", "Cannot allocate memory")
    ):
        raise ConversionError(memory, permanent=False)
    if code is not None and code < 0:
        raise ConversionError(f"the parser crashed (signal {-code})", permanent=False)
    tail = stderr.strip().splitlines()[-1:] or [f"exit status {code}"]
    raise ConversionError(
        f"could not read this {_KIND_NAMES.get(kind, kind)} file: {tail[0]}", permanent=False
    )


def _child(kind: str, src: str, out: str) -> int:
    from documents.converters import converter_for

    if os.environ.get(FAULT_ENV) in ("segv", f"segv:{kind}"):  # every child, or one kind
        os.kill(os.getpid(), signal.SIGSEGV)
    data = Path(src).read_bytes()
    try:
        if kind == PDF_WORDS:
            from documents.word_boxes import pdf_page_words, words_pack

            payload = {"ok": base64.b64encode(words_pack(pdf_page_words(data))).decode("ascii")}
        else:
            payload = {"ok": converter_for(kind).convert(data).to_json()}
    except ConversionError as exc:
        payload = {"error": exc.reason, "permanent": exc.permanent}
    except MemoryError:
        payload = {"error": _MEMORY}
    except Exception as exc:  # anything else: a readable reason, not a traceback; it may
        # be the machine's (an import failing under the memory limit): worth a retry
        payload = {
            "error": f"could not read this {_KIND_NAMES.get(kind, kind)} file: {exc}".rstrip(": "),
            "permanent": False,
        }
    Path(out).write_text(json.dumps(payload), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:4]))
