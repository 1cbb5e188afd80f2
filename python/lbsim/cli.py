"""The ``lbsim`` command line.

    lbsim run SCENARIO.toml --out DIR [--seed N] [--set key=value ...] [--strict] [--force] [--allow-long]
    lbsim flows SCENARIO.toml --out FLOWS.csv [--seed N] [--set ...]
    lbsim schemes [--json]
    lbsim validate SCENARIO.toml [--set ...] [--json] [--allow-long]
    lbsim plot RUN_DIR [RUN_DIR ...] --out DIR [--group scheme]
    lbsim compare SCENARIO.toml --schemes A,B[,...] --out DIR [--seeds N | --until PCT]
    lbsim sweep FILE [--workers N] [--ray ADDRESS] [--quick]
    lbsim reproduce NAME | --list
    lbsim --version

Bad input (an unreadable or non-UTF-8 file, an unwritable --out, an
unreachable --ray cluster) fails with one line naming it, exit status 2;
so does work estimated at more than a day of wall time (unless
--allow-long), and an existing non-empty --out folder that holds no lbsim
run (no summary.json; unless --force). Work estimated at more than ten
minutes gets one warning line on stderr naming the key that decides it,
before the first event (unless --allow-long). A run that leaves flows unfinished
or completes none ends with one warning line on stderr naming the likely
cause; with --strict it exits with status 3. Ctrl-C exits 130 and SIGTERM
143, after stopping any sweep workers.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import lbsim
from lbsim import _api


class ProgressBar:
    """A one-line progress bar on stderr (a plain line every 10 s when
    stderr is not a terminal)."""

    def __init__(self, label: str, enabled: bool = True):
        self.label = label
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0
        self.shown = False

    def __call__(self, p: dict) -> bool:
        if not self.enabled:
            return True
        done, total = p["flows_done"], max(p["flows_total"], 1)
        frac = min(done / total, 1.0)
        wall = p["wall_s"]
        eta = f"{wall / frac - wall:5.0f}s" if frac > 0.01 else "  ?  "
        rate = p["events"] / wall / 1e6 if wall > 0 else 0.0
        text = (f"{self.label} {frac * 100:5.1f}% flows {done}/{total} sim {p['sim_time_s'] * 1e3:9.2f} ms "
                f"{rate:5.1f} Mev/s ETA {eta}")
        if self.tty:
            n = 24
            bar = "#" * int(frac * n) + "-" * (n - int(frac * n))
            sys.stderr.write(f"\r[{bar}] {text}")
            sys.stderr.flush()
            self.shown = True
        elif wall - self.last_line >= 10:
            self.last_line = wall
            print(text, file=sys.stderr, flush=True)
        return True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _fail(msg: str, code: int = 2) -> None:
    print(f"lbsim: error: {msg}", file=sys.stderr)
    sys.exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs (a sweep
    stops its workers and removes their partial runs)."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _check_out(out: str, folder: bool) -> None:
    """Fails now, before any simulation, if ``--out`` cannot be written: a
    file where a folder goes (or the reverse), a missing parent folder for a
    file, or no permission to write."""
    p = Path(out)
    if folder:
        if os.path.exists(p) and not os.path.isdir(p):
            _fail(f"--out {out}: exists and is not a folder")
        d = p
        while not os.path.exists(d):  # the folder it will be created in
            d = d.parent
        if not os.path.isdir(d):
            _fail(f"--out {out}: {d} is not a folder")
    else:
        if os.path.isdir(p):
            _fail(f"--out {out}: is a folder, not a file")
        d = p.parent
        if not os.path.isdir(d):
            _fail(f"--out {out}: folder {d} does not exist")
    try:
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as e:
        _fail(f"--out {out}: cannot write in {d} ({e.strerror or e})")


def _check_run_folder(out: str, force: bool) -> Optional[str]:
    """Refuses an existing non-empty --out that is not an lbsim run folder
    (no summary.json) unless ``force``; returns a note when an earlier run
    there will be replaced."""
    p = Path(out)
    if not p.is_dir() or not any(p.iterdir()):
        return None
    if (p / "summary.json").exists():
        return f"note: replacing the earlier run in {out}"
    if not force:
        _fail(f"--out {out}: exists, is not empty and holds no lbsim run (no summary.json); pass --force to write into it")
    return None


def _warn_long(e: dict, allow_long: bool) -> None:
    """The one-line warning about work estimated above ten minutes (explain's
    ``long_run``, naming the key), on stderr unless --allow-long."""
    if e["long_run"] and not allow_long:
        print(f"lbsim: warning: {e['long_run']['message']}", file=sys.stderr, flush=True)


def cmd_run(a: argparse.Namespace) -> None:
    _check_out(a.out, folder=True)
    note = _check_run_folder(a.out, a.force)

    def started(e: dict) -> bool:
        # before the first event: the long-run warning, then the header
        _warn_long(e, a.allow_long)
        if not a.quiet:
            for line in _api.explanation_lines(e):
                print(line)
            sys.stdout.flush()
        return True

    bar = ProgressBar("run", enabled=not a.quiet)
    t0 = time.perf_counter()
    try:
        res = _api.run(Path(a.scenario), seed=a.seed, set=a.set, progress=bar, allow_long=a.allow_long,
                       command_line=a.command_line, on_start=started)
    finally:
        bar.close()
    if note:
        print(note, file=sys.stderr)
    out = res.write(a.out)
    (out / "scenario.toml").write_text(_api.resolved_scenario(Path(a.scenario), seed=a.seed, set=a.set))
    written = [*res.written, out / "scenario.toml"]
    s = res.summary
    fl = s["flows"]
    fct = s.get("fct_us") or {}
    w = s["workload"]
    if not a.quiet:
        print(f"scenario {s['scenario'] or a.scenario}  scheme {s['scheme']['name']}  seed {s['seed']}")
        if w.get("kind") == "poisson":
            print(f"workload {w['cdf']} (mean {w['mean_flow_bytes'] / 1e3:.1f} KB), load {w['load']} of {w['load_of']} "
                  f"= {w['offered_gbps']:.1f} Gb/s offered of {w['capacity_gbps']:.1f} Gb/s")
        elif w.get("kind") == "per_sender":
            print(f"workload one {w['cdf']} flow per sender (mean {w['mean_flow_bytes'] / 1e3:.1f} KB), {w['pattern']}, "
                  f"mean start gap {w['start_gap_us']} us")
        print(f"flows {fl['completed']}/{fl['total']} completed ({fl['unfinished']} unfinished)")
        if fct.get("n"):
            print(f"FCT mean {fct['mean'] / 1e3:.3f} ms  p50 {fct['p50'] / 1e3:.3f} ms  p99 {fct['p99'] / 1e3:.3f} ms")
            for b in s["buckets"]:
                if b["completed"]:
                    print(f"  {b['bucket']:>12}: n={b['completed']:<6} mean {b['fct_us']['mean'] / 1e3:9.3f} ms  "
                          f"p99 {b['fct_us']['p99'] / 1e3:9.3f} ms")
        for j in s.get("jobs") or []:
            it, bw = j["iteration_us"], j["busbw_gbps"]
            line = (f"job {j['name']} ({j['op']}, {j['ranks']} ranks, {j['size_bytes'] / 2**20:.4g} MiB): "
                    f"{j['iterations_completed']}/{j['iterations']} iterations")
            if bw.get("n"):
                line += (f", mean {it['mean'] / 1e3:.3f} ms; busbw mean {bw['mean']:.2f} Gb/s "
                         f"({j['busbw_over_ideal']:.2f} of the ideal {j['ideal_busbw_gbps']:.2f} Gb/s)")
            print(line)
        if "incast" in s:
            i = s["incast"]
            print(f"incast: {i['requests_completed']}/{i['requests']} requests, goodput {i['goodput_gbps']:.2f} Gb/s")
        d = s["network"]["drops"]
        print(f"drops {d['total']}  ECN marks {s['network']['ecn_marks']}  retransmits {s['transport']['retransmits']}  "
              f"timeouts {s['transport']['timeouts']}")
        c = s["conservation"]
        expired = s["network"]["probe_ttl_expiries"]
        why = f" ({d['total']} drops + {expired} probe TTL expiries)" if expired else ""
        print(f"conservation {'ok' if c['ok'] else 'VIOLATED'}: sent {c['sent']} = delivered {c['delivered']} + "
              f"dropped {c['dropped']}{why} + in flight {c['in_flight']}")
        print(f"simulated {s['sim_time_s'] * 1e3:.2f} ms, {s['events']} events in {s['wall_s']:.2f} s "
              f"({s['events_per_s'] / 1e6:.2f} M events/s; total {time.perf_counter() - t0:.2f} s)")
        print("wrote " + ", ".join(str(p) for p in written))
    warning = fl.get("warning")
    if warning:
        print(f"lbsim: warning: {warning}", file=sys.stderr)
        if a.strict:
            sys.exit(3)


def cmd_flows(a: argparse.Namespace) -> None:
    _check_out(a.out, folder=False)
    text = _api.flows_csv(Path(a.scenario), seed=a.seed, set=a.set)
    with open(a.out, "w") as f:
        f.write(text)
    print(f"wrote {text.count(chr(10)) - 1} flows to {a.out}")


def cmd_schemes(a: argparse.Namespace) -> None:
    sch = _api.schemes()
    if a.json:
        print(json.dumps(sch, indent=2))
        return
    for s in sch:
        print(f"{s['name']}  ({s['acts_at']})")
        print(f"    {s['summary']}")
        print(f"    follows: {s['follows']}")
        for c in s["transport_sees"]:
            print(f"    changes what the transport receives: {c}")
        for p in s["params"]:
            unit = f" [{p['unit']}]" if p["unit"] else ""
            print(f"    - {p['name']}{unit} = {p['default']}: {p['help']}")
        if not s["params"]:
            print("    (no parameters)")
        print()


def cmd_plot(a: argparse.Namespace) -> None:
    from lbsim.plot import plot_runs

    for path in plot_runs([Path(r) for r in a.runs], Path(a.out), group=a.group):
        print(f"wrote {path}")


def cmd_validate(a: argparse.Namespace) -> None:
    e = _api.validate(Path(a.scenario), seed=a.seed, set=a.set, allow_long=a.allow_long)
    _warn_long(e, a.allow_long)
    if a.json:
        print(json.dumps(e, indent=2))
        return
    for line in _api.explanation_lines(e):
        print(line)
    print(f"{a.scenario}: ok")


class _Version(argparse.Action):
    """``--version``: the package version, the git commit the simulator was
    built from (and whether the tree had uncommitted changes), the model
    revision; one line, unwrapped."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"lbsim {getattr(lbsim._lbsim, '__build__', None) or lbsim.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lbsim", description="Packet-level simulator of datacenter load balancing.")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version, git commit and model revision, and exit")
    sub = p.add_subparsers(dest="cmd", required=True)

    def scenario_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("scenario", help="scenario file (TOML)")
        sp.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario key (TOML value syntax), e.g. --set workload.load=0.7")

    def allow_long_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--allow-long", action="store_true",
                        help="accept work estimated at more than a day of wall time, and give no warning for more than ten minutes")

    r = sub.add_parser("run", help="run a scenario; write DIR/flows.parquet and DIR/summary.json")
    scenario_args(r)
    r.add_argument("--out", required=True, help="output folder")
    r.add_argument("--quiet", action="store_true", help="no header, progress bar or report")
    r.add_argument("--strict", action="store_true",
                   help="exit with status 3 if flows are left unfinished or none completes")
    r.add_argument("--force", action="store_true",
                   help="write into an existing non-empty --out folder that holds no lbsim run")
    allow_long_arg(r)
    r.set_defaults(fn=cmd_run)

    f = sub.add_parser("flows", help="export the scenario's flow list as CSV (src,dst,size_bytes,start_us)")
    scenario_args(f)
    f.add_argument("--out", required=True, help="CSV file to write")
    f.set_defaults(fn=cmd_flows)

    s = sub.add_parser("schemes", help="list the load-balancing schemes and their parameters")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_schemes)

    pl = sub.add_parser("plot", help="FCT CDF, slowdown by size, link utilisation and flow goodput figures for one run or several")
    pl.add_argument("runs", nargs="+", help="run folders (written by lbsim run --out)")
    pl.add_argument("--out", required=True, help="folder for the PNG and CSV files")
    pl.add_argument("--group", choices=["scheme"], default=None,
                    help="pool the runs of each scheme (e.g. several seeds) into one series: median CDF with a band, "
                         "bars with 95 %% t intervals over runs")
    pl.set_defaults(fn=cmd_plot)

    v = sub.add_parser("validate", help="check a scenario file and explain what it asks for: sizes, per-rack load, "
                                         "expected time, estimated events, wall time and memory, warnings")
    scenario_args(v)
    v.add_argument("--json", action="store_true", help="print the explanation as JSON")
    allow_long_arg(v)
    v.set_defaults(fn=cmd_validate)

    from lbsim.compare import add_command

    add_command(sub)

    try:
        from lbsim import experiments

        experiments.add_commands(sub)
    except ImportError:  # pragma: no cover - experiments are optional
        pass
    return p


def main(argv: Optional[list[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["lbsim", *(sys.argv[1:] if argv is None else map(str, argv))])
    # SIGTERM stops like Ctrl-C (signal handlers only exist in the main thread)
    main_thread = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        args.fn(args)
    except lbsim.LbsimError as e:  # bad scenario, sweep or comparison: one line naming it
        _fail(str(e))
    except OSError as e:  # missing, unreadable or unwritable files, named in the message
        _fail(str(e))
    except Terminated:
        _fail("terminated (SIGTERM)", 128 + signal.SIGTERM)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if old_term is None else old_term)


if __name__ == "__main__":
    main()
