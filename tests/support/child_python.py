"""A fresh Python process for a test: what a worker or web process sees at its start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def child_json(script: str, env: dict[str, str], timeout: float = 600) -> tuple[Any, str]:
    """Run ``script`` in a new interpreter at the project root, the environment plus
    ``env`` (test settings, offline model), and return its last printed line as JSON
    with its stderr; a failing child fails the test with its stderr's end."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "provenance_site.settings.test",
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr
