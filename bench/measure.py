"""Runs a command in a fresh process and measures it: wall time and the
child's own peak RSS (from wait4, so no /usr/bin/time is needed and other
children do not count). Shared by b1_compare.py and scale.py."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time


def run_timed(cmd: list[str], cwd: str | None = None) -> tuple[str, float, float]:
    """Runs cmd; returns (stdout, wall seconds, peak RSS in MB). Exits with
    the command's stderr tail if it fails."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"command failed (exit {p.returncode}): {' '.join(map(str, cmd))}\n{err.read().decode(errors='replace')[-3000:]}")
        return out.read().decode(), wall, ru.ru_maxrss / 1024.0
