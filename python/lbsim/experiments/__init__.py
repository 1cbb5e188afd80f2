"""Paper reproductions: sweep files in ``experiments/``, run locally or on
Ray, collected in a results catalog, turned into figures and REPRODUCTION.md.

    lbsim sweep experiments/clove_fig8.toml --workers 2
    lbsim reproduce --list
    lbsim reproduce clove_fig8 [--quick] [--workers N] [--ray ADDRESS] [--until [--max-seeds N]]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Optional

from lbsim.experiments.sweep import Sweep, SweepError, load, run_sweep


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


def papers() -> dict[str, str]:
    """Experiment name -> the paper it reproduces (the first word of its
    [experiment].paper), for the report's verdicts per paper."""
    from lbsim.experiments.report import paper_of

    return {f.stem: paper_of(tomllib.loads(f.read_text())) for f in registry()}


def data_files(data_dir: Path, quick: bool = False) -> dict[str, Path]:
    """Experiment -> its run index in ``data_dir`` (named by its catalog)."""
    out = {}
    for f in registry():
        spec = tomllib.loads(f.read_text())
        out[f.stem] = data_dir / f"{spec.get('experiment', {}).get('name') or f.stem}{'-quick' if quick else ''}.parquet"
    return out


def reproduce(name: str, quick: bool = False, workers: int = 1, ray: Optional[str] = None, root: str = "results",
              run: bool = True, quiet: bool = False, until: bool = False, max_seeds: Optional[int] = None) -> Path:
    """Runs experiment ``name`` (the points not in the catalog under the
    current revisions), draws it and rewrites its part of the report; with
    ``until``, then adds seeds to the points of its inconclusive claims
    (``lbsim.experiments.until``) and records them in the sweep file."""
    from lbsim.experiments.analysis import Runs
    from lbsim.experiments.report import assemble, evaluate_claims, fragment, write_claims
    from lbsim.experiments.until import MAX_SEEDS, append_added_seeds, seeds_until_decided, still_open

    path = experiments_dir() / f"{name}.toml"
    if not path.exists():
        raise SweepError(f"no experiment {name!r}; see `lbsim reproduce --list`")
    if max_seeds is not None and not until:
        raise SweepError("--max-seeds: only with --until")
    if until and quick:
        raise SweepError("--until: not with --quick (the seeds it adds are kept in the sweep file, for the full runs)")
    sw = load(path, quick=quick)
    if run or until:
        run_sweep(sw, root, workers=workers, ray_address=ray, quiet=quiet)
    if until:
        _, entries = seeds_until_decided(sw, root, lambda: evaluate_claims(sw, Runs(sw, root)),
                                         max_seeds=MAX_SEEDS if max_seeds is None else max_seeds,
                                         workers=workers, ray=ray, quiet=quiet)
        append_added_seeds(sw, entries)
        if not quiet:
            for e in entries:
                print(f"reproduce --until: {path.name}: added seeds {e['seeds']} where {e['where']}", file=sys.stderr)
    fig_dir, frag_dir, out = _report_paths(quick, Path(root))
    frag_dir.mkdir(parents=True, exist_ok=True)
    # the run index (axes, hash, headline metrics) travels with the report,
    # with the per-run statistics the claims use that the index lacks
    import shutil

    from lbsim.experiments.sweep import catalog_dir

    data = frag_dir.parent / "data"
    idx = catalog_dir(root, sw) / "index.parquet"
    runs = Runs(sw, root)
    claims = evaluate_claims(sw, runs) if runs.points else []
    if idx.exists():
        data.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(idx, data / f"{sw.catalog_name}.parquet")
        _write_run_stats(runs, idx, data / f"{sw.catalog_name}.stats.json")
    write_claims(frag_dir.parent / "claims", name, claims)
    rel = os.path.relpath(fig_dir, out.parent)
    (frag_dir / f"{name}.md").write_text(fragment(sw, root, fig_dir, rel, claims))
    assemble(frag_dir, [f.stem for f in registry()], out, frag_dir.parent / "claims", papers(), data_files(data, quick))
    if until and not quiet:
        left = still_open(sw, claims)
        print(f"reproduce --until: {len(left)} claim(s) still inconclusive" + "".join(f"\n  {x}" for x in left), file=sys.stderr)
    return out


def _write_run_stats(runs, idx: Path, out: Path) -> None:
    """Per run, the claims' statistics the index does not hold (they need
    the run's tables), so the claims can be recomputed from the repository."""
    import json
    import math

    import pandas as pd

    cols = set(pd.read_parquet(idx).columns)
    extra: dict[str, dict] = {}
    for (h, name), v in sorted(runs._cache.items()):
        if name not in cols and not name.startswith("buckets.") and name != "nonloss_fr_per_packet":
            extra.setdefault(h, {})[name] = v if math.isfinite(v) else None
    if extra:
        out.write_text(json.dumps(extra, indent=0, sort_keys=True) + "\n")
    elif out.exists():
        out.unlink()


def cmd_sweep(a: argparse.Namespace) -> None:
    sw = load(a.file, quick=a.quick)
    cat = run_sweep(sw, a.root, workers=a.workers, ray_address=a.ray)
    print(f"{sw.catalog_name}: {len(sw.points)} runs in {cat} (index: {cat / 'index.parquet'})")


def recompute_report(quiet: bool = False) -> list:
    """Recomputes every claim from the committed data (``reproduction/data``:
    the run index and per-run statistics), keeping the per-seed values of
    ``reproduction/claims`` for a statistic the data lacks, writes the claim
    files and reassembles REPRODUCTION.md (no results catalog needed).
    Returns the changed verdicts (experiment, figure, quote, old, new)."""
    from lbsim.experiments.report import assemble, write_claims

    fig_dir, frag_dir, out = _report_paths(False, Path("results"))
    claims_dir = frag_dir.parent / "claims"
    changed = []
    for f in registry():
        sw = load(f)
        cf = claims_dir / f"{f.stem}.json"
        old = json.loads(cf.read_text()) if cf.exists() else []
        new = recompute_claims(sw, frag_dir.parent / "data", old)
        write_claims(claims_dir, f.stem, new)
        changed += [(f.stem, n["figure"], n["claim"], o["verdict"], n["verdict"]) for o, n in zip(old, new) if o["verdict"] != n["verdict"]]
    assemble(frag_dir, [f.stem for f in registry()], out, claims_dir, papers(), data_files(frag_dir.parent / "data"))
    if not quiet:
        for name, fig, quote, old_v, new_v in changed:
            print(f"{name} {fig}: {old_v} -> {new_v}   {quote[:80]}")
        print(f"{len(changed)} verdicts changed; wrote {out}")
    return changed


def recompute_claims(sw: Sweep, data_dir: Path, old: list[dict]) -> list[dict]:
    """A sweep's claim objects from the committed data; where a claim's
    statistic is not in it, from the per-seed values of its previous object
    (``old``, matched by position, figure and quote)."""
    from lbsim.experiments.claims import CommittedRuns, NotInData, evaluate, from_per_seed, link_statements

    if not (data_dir / f"{sw.catalog_name}.parquet").exists():
        return old
    runs = CommittedRuns(sw, data_dir)
    out = []
    for i, c in enumerate(sw.spec.get("claim", [])):
        try:
            out.append(evaluate(runs, c, sw.name))
        except NotInData as e:
            prev = old[i] if i < len(old) else None
            if prev is None or prev["figure"] != str(c.get("figure", "")) or prev["claim"] != c.get("quote", ""):
                raise SweepError(f"{sw.path.name}: [[claim]] #{i + 1}: statistic {e} is not in the committed data "
                                 "and no earlier claim object keeps its per-seed values; rerun with the catalog") from None
            out.append(from_per_seed(c, prev, sw.name, f"the statistic {e.args[0]}"))
    return link_statements(sw.name, sw.spec.get("claim", []), out)


def cmd_reproduce(a: argparse.Namespace) -> None:
    if a.rejudge:
        recompute_report()
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
    out = reproduce(a.name, quick=a.quick, workers=a.workers, ray=a.ray, root=a.root, run=not a.no_run,
                    until=a.until, max_seeds=a.max_seeds)
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
    r.add_argument("--until", action="store_true",
                   help="then add seeds to the points of the inconclusive claims, in batches, until decided or --max-seeds; "
                        "the seeds added are appended to the sweep file as [[added_seeds]]")
    r.add_argument("--max-seeds", type=int, default=None, metavar="N",
                   help="most seeds a claim gets with --until (default 10)")
    r.add_argument("--rejudge", action="store_true",
                   help="recompute every claim from the committed data and rewrite REPRODUCTION.md (no catalog needed)")
    r.set_defaults(fn=cmd_reproduce)
