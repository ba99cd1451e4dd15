"""Running a benchmark script in a child process: Django is set up there, on a
database of its own, never in ``bench/run.py``'s process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_script(script: Path, *args: str, timeout: float) -> dict[str, Any]:
    """``python SCRIPT --output FILE ARGS…`` and the JSON it wrote."""
    with tempfile.TemporaryDirectory(prefix=f"{script.stem}-") as folder:
        output = Path(folder) / "result.json"
        command = [sys.executable, str(script), "--output", str(output), *args]
        env = {k: v for k, v in os.environ.items() if k != "PROVENANCE_DB_NAME"}
        completed = subprocess.run(command, cwd=ROOT, env=env, check=False, timeout=timeout)
        if completed.returncode != 0 or not output.exists():
            raise RuntimeError(f"{script.name} exited with {completed.returncode}")
        return json.loads(output.read_text())


def result_write(result: dict[str, Any], output: str | None) -> None:
    """A script's result as JSON: to ``--output`` when ``run_script`` asked for it,
    else on standard output (the script run by hand)."""
    text = json.dumps(result, indent=2, default=str) + "\n"
    if output:
        Path(output).write_text(text)
    else:
        sys.stdout.write(text)


def script_main(measure: Callable[[], dict[str, Any]], doc: str | None) -> int:
    """The command line of a benchmark script that takes no options of its own: its
    measurement written where ``run_script`` asks (``--output``), else printed."""
    import argparse

    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--output")
    result_write(measure(), parser.parse_args().output)
    return 0
