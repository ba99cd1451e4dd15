"""`make bench`: run every benchmark in bench/ and merge the figures.

Each benchmark is a module here with ``run() -> dict`` (``run(quick=...)`` if it
takes that argument). One failing benchmark is recorded and the others still run.
Results go to bench/results/latest.json and bench/results/latest.md.

``--scale`` (or ``PROVENANCE_BENCH_SCALE=1``, for ``make bench``) runs instead the
benchmarks that have a scale size (``run(scale=True)``: retrieval at 1M chunks) and
writes bench/results/scale-1m.json and scale-1m.md.

Usage: python bench/run.py [--quick | --scale] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
# Run in this order; a name whose file does not exist yet is skipped.
BENCHMARKS = (
    "embed_speed",
    "pdf_speed",
    "ingest_speed",
    "ingest_scaling",
    "retrieval_latency",
    "recall_report",
    "process_start",
    "fp32_roofline",
)
SCALE_BENCHMARKS = ("retrieval_latency",)  # run(scale=True): long (~1 h the first time)
SCRIPT_TIMEOUT_SECONDS = 1800

for path in (ROOT, BENCH):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")


def machine_info() -> dict[str, Any]:
    """Enough to tell whether two result files are comparable."""
    model = ""
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        model = platform.processor()
    bf16_flags = sorted(f for f in flags if "bf16" in f or f.startswith("amx"))
    if "cpuid_mask" in os.environ.get("LD_PRELOAD", ""):  # scripts/avx2_only.sh
        model, bf16_flags = f"{model}, CPUID masked to AVX2 (scripts/avx2_only.sh)", []
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "bf16_flags": bf16_flags,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def available(*, scale: bool = False) -> list[str]:
    names = SCALE_BENCHMARKS if scale else BENCHMARKS
    return [name for name in names if (BENCH / f"{name}.py").exists()]


def run_one(name: str, *, quick: bool, scale: bool = False) -> dict[str, Any]:
    """One benchmark's result, or its error; never raises."""
    started = time.perf_counter()
    result: dict[str, Any]
    try:
        module = importlib.import_module(name)
        if callable(getattr(module, "run", None)):
            figures = _call_run(module, quick=quick, scale=scale)
            result = {"status": "ok", "results": figures}
        else:
            result = _run_script(name)
    except Exception as error:  # one benchmark must not stop the others
        result = {
            "status": "error",
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(limit=8),
        }
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["timestamp"] = now()
    result["machine"] = machine_info()
    return result


def _call_run(module: ModuleType, *, quick: bool, scale: bool) -> Any:
    parameters = inspect.signature(module.run).parameters
    options = {"quick": quick, "scale": scale}
    return module.run(**{key: value for key, value in options.items() if key in parameters})


def _run_script(name: str) -> dict[str, Any]:
    """A benchmark without ``run()`` yet: run it as a script and keep its output."""
    completed = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_SECONDS,
        check=False,
    )
    status = "ok" if completed.returncode == 0 else "error"
    result: dict[str, Any] = {
        "status": status,
        "note": "no run() function; ran as a script",
        "output": completed.stdout.strip().splitlines(),
    }
    if status == "error":
        result["error"] = f"exit code {completed.returncode}"
        result["stderr"] = completed.stderr.strip().splitlines()[-20:]
    return result


def to_markdown(report: dict[str, Any]) -> str:
    """latest.md: each benchmark's own summary when it has ``to_markdown``."""
    machine = report["machine"]
    title = "Benchmarks at scale" if report.get("scale") else "Benchmarks"
    lines = [
        f"# {title} ({report['timestamp']})",
        "",
        f"{machine['cpu_count']} CPUs, {machine['cpu_model']}; "
        f"bf16 flags: {', '.join(machine['bf16_flags']) or 'none'}.",
        "",
    ]
    for name, result in report["benchmarks"].items():
        ran_on = result.get("machine", {})
        lines += [
            f"## {name}: {result['status']} ({result['seconds']} s, {result['timestamp']})",
            "",
            f"Host: {ran_on.get('cpu_count', '?')} CPUs, {ran_on.get('cpu_model', '?')}, bf16 "
            f"flags {', '.join(ran_on.get('bf16_flags', [])) or 'none'}; load average when it "
            f"ended {ran_on.get('loadavg', '?')}.",
            "",
        ]
        lines += [_section(name, result), ""]
    return "\n".join(lines)


def _section(name: str, result: dict[str, Any]) -> str:
    if result["status"] != "ok":
        return (
            "```\n"
            + result.get("error", "")
            + "\n"
            + "\n".join(result.get("stderr", []))
            + result.get("traceback", "")
            + "\n```"
        )
    if "output" in result:
        return "```\n" + "\n".join(result["output"]) + "\n```"
    try:
        module = importlib.import_module(name)
        if callable(getattr(module, "to_markdown", None)):
            return module.to_markdown(result["results"])
    except Exception as error:  # fall back to the raw figures
        figures = json.dumps(result["results"], indent=2, default=str)
        return f"(summary failed: {error})\n\n```json\n{figures}\n```"
    return "```json\n" + json.dumps(result["results"], indent=2, default=str) + "\n```"


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the benchmarks in bench/.")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    size.add_argument(
        "--scale",
        action="store_true",
        default=os.environ.get("PROVENANCE_BENCH_SCALE", "") not in ("", "0"),
        help=f"the scale sizes of {', '.join(SCALE_BENCHMARKS)} (1M chunks) into scale-1m.*",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        choices=BENCHMARKS,
        help="run these; keep the other figures from the results file",
    )
    args = parser.parse_args()
    names = [n for n in available(scale=args.scale) if not args.only or n in args.only]
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "scale-1m" if args.scale else "latest"
    latest = RESULTS / f"{stem}.json"
    keep = args.only or args.scale  # a scale run covers few benchmarks: keep the others
    previous = json.loads(latest.read_text()) if keep and latest.exists() else {}
    report = {
        "timestamp": now(),
        "machine": machine_info(),
        "quick": args.quick,
        "scale": args.scale,
        "benchmarks": dict(previous.get("benchmarks", {})),
    }
    for name in names:
        print(f"== {name}", flush=True)
        report["benchmarks"][name] = run_one(name, quick=args.quick, scale=args.scale)
        print(
            f"   {report['benchmarks'][name]['status']} in "
            f"{report['benchmarks'][name]['seconds']} s",
            flush=True,
        )
    latest.write_text(json.dumps(report, indent=2, default=str) + "\n")
    (RESULTS / f"{stem}.md").write_text(to_markdown(report) + "\n")
    print(f"wrote {latest.relative_to(ROOT)} and {stem}.md")
    return 0 if all(report["benchmarks"][n]["status"] == "ok" for n in names) else 1


if __name__ == "__main__":
    sys.exit(main())
