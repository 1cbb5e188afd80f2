"""Paper reproductions: sweep files in ``experiments/``, run locally or on
Ray, collected in a results catalog, turned into figures and REPRODUCTION.md.

    lbsim sweep experiments/clove_fig8.toml --workers 2
    lbsim reproduce --list
    lbsim reproduce clove_fig8 [--quick] [--workers N] [--ray ADDRESS]
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Optional

from lbsim.experiments.sweep import SweepError, load, run_sweep


def experiments_dir() -> Path:
    """``$LBSIM_EXPERIMENTS``, ``./experiments``, or the checkout's."""
    env = os.environ.get("LBSIM_EXPERIMENTS")
    if env:
        return Path(env)
    cwd = Path.cwd() / "experiments"
    if cwd.is_dir():
        return cwd
    here = Path(__file__).resolve()
    for up in here.parents:
        if (up / "experiments").is_dir() and (up / "Cargo.toml").exists():
            return up / "experiments"
    raise SweepError("no experiments/ folder found: run from the lbsim checkout or set LBSIM_EXPERIMENTS")


def registry() -> list[Path]:
    """Sweep files in report order (the [experiment].order key, then name)."""
    files = sorted(experiments_dir().glob("*.toml"))
    keyed = []
    for f in files:
        try:
            order = tomllib.loads(f.read_text()).get("experiment", {}).get("order", 999)
        except Exception:
            order = 999
        keyed.append((order, f.stem, f))
    return [f for _, _, f in sorted(keyed)]


def _report_paths(quick: bool, root: Path) -> tuple[Path, Path, Path]:
    """(figures dir, fragments dir, REPRODUCTION.md) — quick runs never touch
    the committed full report."""
    if quick:
        base = root / "quick-report"
        return base / "figures", base / "fragments", base / "REPRODUCTION.md"
    repo = experiments_dir().parent
    return repo / "reproduction" / "figures", repo / "reproduction" / "fragments", repo / "REPRODUCTION.md"


def reproduce(name: str, quick: bool = False, workers: int = 1, ray: Optional[str] = None, root: str = "results",
              run: bool = True, quiet: bool = False) -> Path:
    from lbsim.experiments.report import assemble, fragment

    path = experiments_dir() / f"{name}.toml"
    if not path.exists():
        raise SweepError(f"no experiment {name!r}; see `lbsim reproduce --list`")
    sw = load(path, quick=quick)
    if run:
        run_sweep(sw, root, workers=workers, ray_address=ray, quiet=quiet)
    fig_dir, frag_dir, out = _report_paths(quick, Path(root))
    frag_dir.mkdir(parents=True, exist_ok=True)
    # the run index (axes, hash, headline metrics) travels with the report
    import shutil

    from lbsim.experiments.sweep import catalog_dir

    idx = catalog_dir(root, sw) / "index.parquet"
    if idx.exists():
        data = frag_dir.parent / "data"
        data.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(idx, data / f"{sw.catalog_name}.parquet")
    rel = os.path.relpath(fig_dir, out.parent)
    (frag_dir / f"{name}.md").write_text(fragment(sw, root, fig_dir, rel))
    assemble(frag_dir, [f.stem for f in registry()], out)
    return out


def cmd_sweep(a: argparse.Namespace) -> None:
    sw = load(a.file, quick=a.quick)
    cat = run_sweep(sw, a.root, workers=a.workers, ray_address=a.ray)
    print(f"{sw.catalog_name}: {len(sw.points)} runs in {cat} (index: {cat / 'index.parquet'})")


def rejudge_report(quiet: bool = False) -> list:
    """Re-applies the verdict rules to the committed report's claims from the
    numbers it prints (for a checkout without the results catalog), and
    reassembles REPRODUCTION.md. Returns the changed verdicts."""
    from lbsim.experiments.report import assemble, rejudge

    fig_dir, frag_dir, out = _report_paths(False, Path("results"))
    changed = []
    for f in registry():
        frag = frag_dir / f"{f.stem}.md"
        if not frag.exists():
            continue
        text, ch = rejudge(load(f), frag.read_text())
        frag.write_text(text)
        changed += [(f.stem, *c) for c in ch]
    assemble(frag_dir, [f.stem for f in registry()], out)
    if not quiet:
        for name, fig, quote, old, new in changed:
            print(f"{name} {fig}: {old} -> {new}   {quote[:80]}")
        print(f"{len(changed)} verdicts changed; wrote {out}")
    return changed


def cmd_reproduce(a: argparse.Namespace) -> None:
    if a.rejudge:
        rejudge_report()
        return
    if a.list or not a.name:
        print(f"{'experiment':<18} {'runs':>6} {'quick':>6} {'est. full':>10}  title")
        for f in registry():
            sw = load(f)
            nq = len(load(f, quick=True).points) if "quick" in sw.spec else "-"
            est = sw.spec["experiment"].get("estimated_minutes")
            est_s = f"{est:.0f} min" if est is not None else "?"
            print(f"{sw.name:<18} {len(sw.points):>6} {nq:>6} {est_s:>10}  {sw.title}")
        print("\n(est. full: wall time of the committed full sweep, 2 workers on a 2-core machine; --quick runs take a few minutes)")
        return
    out = reproduce(a.name, quick=a.quick, workers=a.workers, ray=a.ray, root=a.root, run=not a.no_run)
    print(f"wrote {out}")


def add_commands(sub) -> None:
    s = sub.add_parser("sweep", help="run a sweep file into the results catalog")
    s.add_argument("file")
    s.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    s.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one here)")
    s.add_argument("--quick", action="store_true", help="the sweep's reduced [quick] variant")
    s.add_argument("--root", default="results", help="catalog root (default ./results)")
    s.set_defaults(fn=cmd_sweep)
    r = sub.add_parser("reproduce", help="run a paper figure's sweep, draw it and update REPRODUCTION.md")
    r.add_argument("name", nargs="?")
    r.add_argument("--list", action="store_true", help="list the experiments with run counts and estimated times")
    r.add_argument("--quick", action="store_true")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--ray", default=None, metavar="ADDRESS")
    r.add_argument("--root", default="results")
    r.add_argument("--no-run", action="store_true", help="only redraw from the catalog")
    r.add_argument("--rejudge", action="store_true",
                   help="re-apply the verdict rules to REPRODUCTION.md's printed numbers (no catalog needed)")
    r.set_defaults(fn=cmd_reproduce)
