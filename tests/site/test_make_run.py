"""``make run`` serves the site's own error pages (issue 33): ``scripts/run.sh`` runs
gunicorn with DEBUG off, static files coming from WhiteNoise after collectstatic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "scripts" / "run.sh"
SETTINGS_PROBE = (
    "import django; from django.conf import settings; django.setup(); "
    "print(settings.DEBUG, 'whitenoise.middleware.WhiteNoiseMiddleware' in settings.MIDDLEWARE)"
)


def _run_sh_environment() -> dict[str, str]:
    """The environment ``run.sh`` gives its processes, for the variables that
    decide DEBUG (its own ``export`` line, evaluated by bash)."""
    export = next(line for line in RUN.read_text().splitlines() if "DJANGO_DEBUG=" in line)
    clean = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    printed = subprocess.run(
        ["/bin/bash", "-c", f'{export}; echo "$DJANGO_SETTINGS_MODULE|$DJANGO_DEBUG"'],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, "DJANGO_SETTINGS_MODULE": "provenance_site.settings.local"},
    ).stdout.strip()
    module, debug = printed.split("|")
    return {**clean, "DJANGO_SETTINGS_MODULE": module, "DJANGO_DEBUG": debug}


def test_it_runs_the_local_settings_with_debug_off_and_whitenoise() -> None:
    probe = subprocess.run(
        [sys.executable, "-c", SETTINGS_PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=_run_sh_environment(),
    )
    assert probe.stdout.split()[-2:] == ["False", "True"]


def test_it_collects_static_files_and_serves_with_gunicorn() -> None:
    script = RUN.read_text()
    assert "manage.py collectstatic --noinput" in script
    assert "-m gunicorn" in script and "runserver" not in script
