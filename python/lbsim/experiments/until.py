"""Seeds until decided: ``lbsim reproduce NAME --until [--max-seeds N]``.

After the sweep's runs, every claim whose verdict is *inconclusive* and
whose interval comes from seeds (not an exact value) gets more seeds at
the points it reads, in batches as ``lbsim compare --until`` adds them
(n seeds, then n + max(2, n // 2), ...), until no such claim is left or
each has ``max_seeds``. The seeds are the sweep's seed axis followed by
the next integers, so every point a claim reads gets the same ones. The
seeds added are appended to the sweep file as ``[[added_seeds]]`` entries
(docs/sweeps.md), so a later ``lbsim reproduce NAME`` runs and reports
the same runs, and the claims still inconclusive are returned with the
seeds their spread would need (in their verdicts).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from lbsim.compare import next_batch
from lbsim.experiments.claims import BOOTSTRAP, GEOMEAN, MEAN, category, selections
from lbsim.experiments.sweep import Sweep, SweepError, _axes_key, run_sweep

MAX_SEEDS = 10  # --max-seeds default
SEEDED = (GEOMEAN, MEAN, BOOTSTRAP)  # methods whose interval narrows with more seeds


def open_claims(sw: Sweep, objs: list[dict], max_seeds: int) -> list[tuple[dict, dict]]:
    """(claim, object) for each claim more seeds may decide: inconclusive,
    an interval over seeds, fewer than ``max_seeds`` of them."""
    return [(c, o) for c, o in zip(sw.spec.get("claim", []), objs)
            if category(o["verdict"]) == "inconclusive" and o["method"] in SEEDED and o["seeds"] < max_seeds]


def seed_order(sw: Sweep, count: int) -> list[int]:
    """The first ``count`` seeds: the seed axis, then the next integers."""
    axis = list(sw.spec["axes"]["seed"])
    nxt = max(int(s) for s in axis) + 1
    while len(axis) < count:
        axis.append(nxt)
        nxt += 1
    return axis[:count]


def _label(c: dict) -> str:
    return f"Fig. {c.get('figure', '?')}"


def seeds_until_decided(sw: Sweep, root: Any, evaluate, max_seeds: int = MAX_SEEDS, workers: int = 1,
                        ray: Optional[str] = None, quiet: bool = False) -> tuple[list[dict], list[dict]]:
    """Adds seeds to the points of the inconclusive claims and reruns the
    sweep (only the new points run) until none is left open; ``evaluate``
    gives the claim objects of the sweep's current runs. Returns the final
    claim objects and the ``[[added_seeds]]`` entries added (where, seeds,
    why), which ``append_added_seeds`` writes to the sweep file."""
    if sw.quick:
        raise SweepError("--until: not with --quick (the seeds it adds are kept in the sweep file, for the full runs)")
    if "seed" not in sw.spec["axes"]:
        raise SweepError(f"--until: {sw.path.name} has no seed axis")
    if max_seeds < 2:
        raise SweepError(f"--max-seeds {max_seeds}: an interval needs at least 2 seeds")
    objs = evaluate()
    added: dict[tuple, dict] = {}
    while True:
        todo = open_claims(sw, objs, max_seeds)
        if not todo:
            break
        want: dict[tuple, tuple[dict, int, list[str]]] = {}
        for c, o in todo:
            target = next_batch(o["seeds"], max_seeds)
            for sel in selections(c):
                sel = {k: v for k, v in sel.items() if k != "seed"}
                key = _axes_key(sel)
                _, t, why = want.get(key, (sel, 0, []))
                want[key] = (sel, max(t, target), why + [_label(c)])
        new = []
        for key, (sel, target, why) in want.items():
            seeds = seed_order(sw, target)
            pts = sw.add_seeds(sel, seeds)
            if pts:
                new += pts
                e = added.setdefault(key, {"where": sel, "seeds": [], "why": []})
                e["seeds"] = sorted(set(e["seeds"]) | {p.axes["seed"] for p in pts})
                e["why"] = list(dict.fromkeys(e["why"] + why))
        if not new:
            break
        if not quiet:
            print(f"reproduce --until: {len(todo)} claim(s) inconclusive ({', '.join(dict.fromkeys(_label(c) for c, _ in todo))}); "
                  f"running {len(new)} more run(s)", file=sys.stderr)
        run_sweep(sw, root, workers=workers, ray_address=ray, quiet=quiet)
        objs = evaluate()
    entries = [{"where": e["where"], "seeds": e["seeds"],
                "why": f"reproduce --until: {', '.join(e['why'])} inconclusive"} for e in added.values()]
    return objs, entries


def _toml_value(v: Any) -> str:
    """A TOML value on one line (a list inline)."""
    import tomli_w

    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return tomli_w.dumps({"v": v}).split("=", 1)[1].strip()


def append_added_seeds(sw: Sweep, entries: list[dict]) -> None:
    """Appends the entries to the sweep file as ``[[added_seeds]]`` tables."""
    if not entries:
        return
    lines = []
    for e in entries:
        where = ", ".join(f"{k} = {_toml_value(v)}" for k, v in e["where"].items())
        lines += ["", "[[added_seeds]]", f"where = {{ {where} }}", f"seeds = {_toml_value(e['seeds'])}",
                  f"why = {_toml_value(e['why'])}"]
    text = sw.path.read_text()
    sw.path.write_text(text + ("" if text.endswith("\n") else "\n") + "\n".join(lines) + "\n")


def still_open(sw: Sweep, objs: list[dict]) -> list[str]:
    """One line per claim still inconclusive: figure, quote, seeds, verdict."""
    return [f"Fig. {o['figure']} “{o['claim'][:70]}”: {o['seeds']} seeds, {o['verdict']}"
            for o in objs if category(o["verdict"]) == "inconclusive"]
