"""Runs a command in a fresh process and measures it: wall time and the
child's own peak RSS (from wait4, so no /usr/bin/time is needed and other
children do not count), reads `/usr/bin/time -v` reports, and says what a
record was measured on (`machine`) and from which commit (`repo_commit`).
Shared by b1_compare.py, scale.py and the HPCC and htsim comparisons."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


def parse_time_v(text: str) -> dict:
    """Wall, CPU and peak RSS (and the exit status, where reported) from
    `/usr/bin/time -v` output."""

    def field(label: str) -> str | None:
        m = re.search(r"^\s*" + re.escape(label) + r".*?: (.+)$", text, re.M)
        return m.group(1).strip() if m else None

    def need(label: str) -> str:
        v = field(label)
        if v is None:
            raise ValueError(f"/usr/bin/time output lacks {label!r}")
        return v

    wall = 0.0
    for part in need("Elapsed (wall clock) time").split(":"):
        wall = wall * 60 + float(part)
    user, system = float(need("User time (seconds)")), float(need("System time (seconds)"))
    rss_kb = int(need("Maximum resident set size (kbytes)"))
    t = {
        "wall_s": round(wall, 2),
        "user_s": user,
        "sys_s": system,
        "cpu_s": round(user + system, 2),
        "max_rss_kb": rss_kb,
        "max_rss_mb": round(rss_kb / 1024, 1),
    }
    if (status := field("Exit status")) is not None:
        t["exit_status"] = int(status)
    return t


def machine() -> dict:
    """The machine a record was measured on: core count, CPU model, system."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "system": platform.platform()}


def repo_commit(path: Path = ROOT) -> str:
    """The commit checked out at ``path`` (this repository by default), or
    "unknown" outside a git checkout."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"
