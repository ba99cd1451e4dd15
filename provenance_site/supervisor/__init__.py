"""``make run`` as a supervisor: ``python -m provenance_site.supervisor``.

:mod:`.run` starts and watches the parts, :mod:`.plan` says what they are and how
long each may take to stop, :mod:`.children` runs one child in a process group of
its own, :mod:`.backoff` spaces restarts, :mod:`.database` finds a postmaster that
outlived its supervisor.
"""
