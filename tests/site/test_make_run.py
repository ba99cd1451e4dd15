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
    """run.sh hands over to the supervisor, whose plan collects the static files
    before anything serves and serves with gunicorn, never runserver."""
    from provenance_site.supervisor import plan

    assert RUN.read_text().rstrip().endswith("-m provenance_site.supervisor")
    options = plan.Options(
        root=ROOT, var=ROOT / "var", port="8000", demo=True, database_url="", app_database_url=""
    )
    setup = [spec.argv[2:4] for spec in plan.setup_commands(options)]
    assert ("collectstatic", "--noinput") in setup
    assert plan.web(options).argv[1:3] == ("-m", "gunicorn")
    assert "runserver" not in " ".join(plan.web(options).argv)
