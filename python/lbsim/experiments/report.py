"""REPRODUCTION.md: per experiment, the setup, the paper's claims beside
our numbers, the figures, and notes on each difference."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Optional

from lbsim.experiments.analysis import Runs, draw
from lbsim.experiments.claims import CATEGORIES, NotInData, category, evaluate
from lbsim.experiments.sweep import Sweep, catalog_dir


def _fmt(x, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        return f"{x:.{digits}g}"
    return str(x)


def sweep_wall(root: str | Path, sw: Sweep) -> Optional[float]:
    """Total wall time spent running this sweep's points (all invocations)."""
    f = catalog_dir(root, sw) / "invocations.jsonl"
    if not f.exists():
        return None
    return sum(json.loads(l).get("wall_s_this_invocation", 0.0) for l in f.read_text().splitlines() if l.strip())


def _why(e: Exception) -> str:
    return f"missing key {e}" if isinstance(e, KeyError) else str(e)


def evaluate_claims(sw: Sweep, runs) -> list[dict]:
    """The sweep's claims as objects (``claims.evaluate``), an error naming the claim."""
    from lbsim.experiments.claims import link_statements

    out: list[dict] = []
    for i, c in enumerate(sw.spec.get("claim", [])):
        try:
            out.append(evaluate(runs, c, sw.name))
        except (KeyError, ValueError) as e:
            if isinstance(e, NotInData):
                raise
            raise ValueError(f"{sw.path.name}: [[claim]] #{i + 1} ({c.get('figure', '')}): {_why(e)}") from None
    return link_statements(sw.name, sw.spec.get("claim", []), out)


def fragment(sw: Sweep, root: str | Path, fig_dir: Path, rel_fig: str, claims: Optional[list[dict]] = None) -> str:
    """Draws the sweep's figures and returns its REPRODUCTION.md section
    (the claims table between ``CLAIMS_BEGIN`` and ``CLAIMS_END``, which
    ``assemble`` fills from ``reproduction/claims/<name>.json``)."""
    from lbsim import _lbsim

    runs = Runs(sw, root)
    e = sw.spec["experiment"]
    lines = [f"## {e.get('title', sw.name)}", "", f"<!-- model-revision: {_lbsim.__model_revision__} -->",
             f"*Model revision:* {_lbsim.__model_revision__}", ""]
    if e.get("paper"):
        lines.append(f"*Paper:* {e['paper']}  ")
    lines.append(f"*Sweep file:* `experiments/{sw.path.name}` — run with `lbsim reproduce {sw.name}`"
                 + (" (**quick mode**: reduced axes and flows)" if sw.quick else ""))
    axes = {k: v for k, v in sw.spec["axes"].items()}
    if sw.quick:
        axes.update(sw.spec.get("quick", {}).get("axes", {}))
    lines.append("")
    lines.append("*Axes:* " + "; ".join(f"{k} = {v}" for k, v in axes.items()))
    wall = sweep_wall(root, sw)
    lines.append(f"*Runs:* {len(runs.points)} of {len(sw.points)} complete"
                 + (f"; sweep wall time {wall / 60:.1f} min on this machine" if wall else ""))
    lines.append("")
    if e.get("setup"):
        lines += [e["setup"].strip(), ""]
    if e.get("choices"):
        lines += ["*Choices where the paper is silent:* " + e["choices"].strip(), ""]
    for fig in sw.spec.get("figure", []):
        stem = f"{sw.catalog_name}_{fig['id']}"
        if runs.points:
            try:
                draw(runs, fig, fig_dir, stem)
            except (KeyError, ValueError) as e:
                raise ValueError(f"{sw.path.name}: [[figure]] {fig.get('id', '?')}: {_why(e)}") from None
            lines.append(f"![{fig.get('title', fig['id'])}]({rel_fig}/{stem}.png)")
            lines.append("")
    if sw.spec.get("claim") and runs.points:
        lines += claims_block(evaluate_claims(sw, runs) if claims is None else claims, sw.name)
    if e.get("notes"):
        lines += ["*Where we differ and why:* " + e["notes"].strip(), ""]
    return "\n".join(lines) + "\n"


CLAIMS_BEGIN = "<!-- claims: rendered from reproduction/claims/{name}.json -->"
CLAIMS_END = "<!-- /claims -->"


def _cell(x: Optional[float]) -> str:
    return "–" if x is None else _fmt(float(x))


def _paper_cell(o: dict) -> str:
    if o["paper"] is None:
        if o["expects"] in ("greater", "less"):
            return f"{'>' if o['expects'] == 'greater' else '<'} {o['pivot']:g}"
        return "–"
    if o["band_low"] is None:
        return _fmt(float(o["paper"]))
    return f"{_fmt(float(o['paper']))} ({_range(o['band_low'], o['band_high'])})"


def _range(lo: float, hi: float) -> str:
    """lo-hi, or "lo to hi" when a bound is negative."""
    return f"{_cell(lo)}{' to ' if min(lo, hi) < 0 else '-'}{_cell(hi)}"


def _seed_cell(o: dict, i: int) -> str:
    """A per-seed value; a ratio whose denominator is 0 (JSON null) is inf."""
    v = o["per_seed"][i]
    if v is not None:
        return _fmt(float(v))
    num, den = o.get("per_seed_num"), o.get("per_seed_den")
    return "inf" if num and den and den[i] == 0 and (num[i] or 0) > 0 else "n/a"


def claims_table(objs: list[dict]) -> list[str]:
    """The claims table of a fragment, from the claim objects."""
    lines = ["| figure | paper's claim | paper (band) | ours | 95 % interval | per seed | verdict |",
             "|---|---|---|---|---|---|---|"]
    for o in objs:
        quote = o["claim"].replace("|", "/")
        ci = "–" if o["ci_low"] is None else _range(o["ci_low"], o["ci_high"])
        seeds = ", ".join(_seed_cell(o, i) for i in range(len(o["per_seed"]))) or "–"
        lines.append(f"| {o['figure']} | “{quote}” | {_paper_cell(o)} | {_cell(o['ours'])} | {ci} | {seeds} | {o['verdict']} |")
    methods = list(dict.fromkeys(o["method"] for o in objs if o.get("method")))
    notes = [f"*Ours:* {'; '.join(methods)}."] if methods else []
    kept = [o for o in objs if o.get("data")]
    if kept:
        stats = ", ".join(f"`{s}`" for s in sorted({o["stat"] for o in kept}))
        notes.append(f"*Not recomputable from the committed data:* {len(kept)} of {len(objs)} claims, whose statistics "
                     f"({stats}) need the runs' tables; their per-seed values are kept from the last report made "
                     "with the run catalog, as it printed them.")
    return lines + [x for n in notes for x in ("", n)]


def claims_block(objs: list[dict], name: str = "") -> list[str]:
    return [CLAIMS_BEGIN.format(name=name)] + claims_table(objs) + [CLAIMS_END, ""]


PAPERS = ("Clove", "CONGA", "AG", "VMS", "Expeditus")


def paper_of(sw_spec: dict) -> str:
    return str(sw_spec.get("experiment", {}).get("paper", "")).split(" (")[0].split(" ")[0]


_GROUPS = (
    ("reproduce", ("reproduces", "no effect, as the paper reports")),
    ("do not", ("same direction, smaller", "same direction, larger", "paper's effect excluded", "opposite",
                "an effect the paper does not report")),
    ("are undecided", ("inconclusive", "not computable", "not compared")),
)


def _fig_key(f: str) -> tuple:
    import re

    m = re.match(r"(\d+)(.*)", f)
    return (int(m.group(1)), m.group(2)) if m else (10**6, f)


def _sentence(paper: str, objs: list[dict], by_cat: dict[str, set], n_stmts: int) -> str:
    """What reproduces and what does not, per verdict with its figures."""

    def figs(c: str) -> str:
        return "Fig. " + ", ".join(sorted({o["figure"] for o in objs if category(o["verdict"]) == c}, key=_fig_key))

    parts = []
    for what, cats in _GROUPS:
        items = [f"{c} {len(by_cat[c])}: {figs(c)}" for c in cats if by_cat.get(c)]
        n = len(set().union(*(by_cat.get(c, set()) for c in cats)))
        if items:
            parts.append(f"{n} {what} ({'; '.join(items)})")
    return f"**{paper}**, {n_stmts} statements: " + "; ".join(parts) + "."


def headline(by_paper: dict[str, list[dict]]) -> str:
    """The report's top: per paper, distinct statements per verdict (rows
    beside them), and a sentence per paper on what reproduces and what does
    not, generated from the claim objects."""
    cats = [c for c in CATEGORIES if any(category(o["verdict"]) == c for objs in by_paper.values() for o in objs)]
    lines = ["| paper | statements (rows) | " + " | ".join(cats) + " |", "|---|---|" + "---|" * len(cats)]
    sentences = []
    for paper, objs in by_paper.items():
        if not objs:
            continue
        stmts = {o["statement"] for o in objs}
        cells = []
        by_cat: dict[str, set] = {}
        for c in cats:
            rows = [o for o in objs if category(o["verdict"]) == c]
            st = {o["statement"] for o in rows}
            by_cat[c] = st
            cells.append(f"{len(st)} ({len(rows)})" if rows else "–")
        lines.append(f"| {paper} | {len(stmts)} ({len(objs)}) | " + " | ".join(cells) + " |")

        sentences.append(_sentence(paper, objs, by_cat, len(stmts)))
    return "\n".join(lines) + "\n\n" + "\n\n".join(sentences) + "\n"


HEADER = """# Reproduction of the Clove, CONGA, AG, VMS and Expeditus evaluations

Generated by `lbsim reproduce` from the results catalog and
`reproduction/claims/*.json`; do not edit by hand (the per-experiment notes
live in `experiments/*.toml`). For each figure: the setup, the paper's
claims quoted beside our number at the same point, a verdict, and an
explanation of the differences. Ratios are written the way the paper
states them (e.g. "ECMP FCT / Clove-ECN FCT = 3" for "3x better").

Verdicts compare our 95 % interval over the seeds run with the paper's
band: its number ±25 % unless the claim states its own tolerance (the
rules, with an example of each, are in docs/sweeps.md, "Verdicts"):
*reproduces* (the interval overlaps the band and excludes the pivot, 1 for
a ratio, on the paper's side); *same direction, smaller / larger* (on the
paper's side but wholly below / above the band, with the share of the
paper's effect we see); *paper's effect excluded* (the interval contains
the pivot and lies wholly below the band); *opposite* (it excludes the
pivot on the other side); *inconclusive* (it overlaps both the pivot and
the band, with the seeds the observed spread would need to decide). Where
the paper reports no effect: *no effect, as the paper reports* (the
interval lies within ±5 % of the pivot), *an effect the paper does not
report* (it lies wholly outside), else *inconclusive*. Our number is the
centre of its interval's method: the geometric mean of per-seed ratios
(t interval on their logs), the mean of per-seed values (t interval), or
where a per-seed ratio is infinite or undefined the ratio of the arms'
means (paired bootstrap); no seed is dropped, and a claim no method
handles is *not computable* with the reason. The per-seed column gives
the statistic for each seed alone. Shaded loads in a figure offer more
than the capacity left after a failure: every scheme's queues grow for
the whole run there, and no ratio is quoted. A dashed line, where drawn,
is ECMP on the same fabric with 10x faster switch-to-switch links: what
no load balancer can beat, since the fabric no longer queues.

Not reproduced: AG Figs. 14-15 (a Mininet/BMv2 testbed: FCT on 20 Mb/s
links and the P4 switch's CPU and memory), out of scope for a packet-level
simulator.

## Verdicts per paper

Distinct paper statements per verdict, with the rows (one per figure point
tested) in parentheses; a statement tested at several points whose rows
differ counts under each of their verdicts.

"""


def _with_claims(text: str, name: str, objs: Optional[list[dict]]) -> str:
    """A fragment with its claims table replaced by one rendered from the objects."""
    begin = CLAIMS_BEGIN.format(name=name)
    if objs is None or begin not in text:
        return text
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(CLAIMS_END)
    return head + "\n".join(claims_block(objs, name)[:-1]) + tail


def stale_banner(name: str, index) -> Optional[str]:
    """The banner of a fragment whose runs (``index``: its run index) were
    made under another model revision, or another revision of a scheme
    they use, than the installed simulator's; None when every run is
    current."""
    from lbsim.experiments.sweep import stale_rows

    old = stale_rows(index)
    if old.empty:
        return None
    if old["current"].isna().all():
        what = "the index records no model revision for its runs"
    else:
        groups = old.groupby(["scheme.name", "model_revision", "current"], sort=True).size()
        what = "; ".join(f"{n} {scheme} run{'s' if n != 1 else ''} under {rec}, now {cur}"
                         for (scheme, rec, cur), n in groups.items())
    return (f"> **Stale:** {len(old)} of {len(index)} runs predate the current model revision or the revision of "
            f"the scheme they use ({what}); their numbers and notes may rest on model faults fixed since. "
            f"`lbsim reproduce {name}` reruns those runs (the others too when the results catalog lacks them).")


def assemble(fragments_dir: Path, order: list[str], out: Path, claims_dir: Optional[Path] = None,
             papers: Optional[dict[str, str]] = None, data: Optional[dict[str, Path]] = None) -> None:
    """Joins the fragments under the verdicts per paper, each claims table
    rendered from ``claims_dir/<name>.json``; a fragment whose run index
    (``data[name]``) holds runs made under another model revision, or
    another revision of their scheme, than the installed simulator's gets a
    banner saying so (without an index: a fragment written under another
    model revision)."""
    import pandas as pd

    from lbsim import _lbsim

    claims_dir = claims_dir or fragments_dir.parent / "claims"
    by_paper: dict[str, list[dict]] = {p: [] for p in PAPERS}
    parts = []
    for name in order:
        f = fragments_dir / f"{name}.md"
        if not f.exists():
            continue
        cf = claims_dir / f"{name}.json"
        objs = json.loads(cf.read_text()) if cf.exists() else None
        if objs:
            by_paper.setdefault((papers or {}).get(name, name.split("_")[0]), []).extend(objs)
        text = _with_claims(f.read_text(), name, objs)
        idx = (data or {}).get(name)
        if idx is not None and idx.exists():
            banner = stale_banner(name, pd.read_parquet(idx))
        elif f"<!-- model-revision: {_lbsim.__model_revision__} -->" not in text:
            banner = (f"> **Stale:** these runs predate model revision {_lbsim.__model_revision__}; "
                      f"their numbers and notes may rest on model faults fixed since. "
                      f"Rerun with `lbsim reproduce {name}`.")
        else:
            banner = None
        if banner:
            title, _, rest = text.partition("\n")
            text = f"{title}\n\n{banner}\n{rest}"
        parts.append(text)
    tmp = out.with_suffix(".md.tmp")
    tmp.write_text(HEADER + headline(by_paper) + "\n" + "\n".join(parts))
    os.replace(tmp, out)


def write_claims(claims_dir: Path, name: str, objs: list[dict]) -> Path:
    """``claims_dir/<name>.json``: the claim objects, one per line of the list."""
    claims_dir.mkdir(parents=True, exist_ok=True)
    f = claims_dir / f"{name}.json"
    f.write_text("[\n" + ",\n".join(json.dumps(o, ensure_ascii=False) for o in objs) + "\n]\n")
    return f
