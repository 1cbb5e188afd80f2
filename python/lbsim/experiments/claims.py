"""The papers' claims as data, and their verdicts.

Each ``[[claim]]`` of a sweep file becomes one object of
``reproduction/claims/<experiment>.json``: the paper's number and its band,
our estimate with its 95 % interval over seeds, the method behind both,
the per-seed values, and a verdict that follows from the object's own
fields alone (``verdict_of``), so a reader or a test can re-check it
without the runs. REPRODUCTION.md's claims tables are rendered from these
objects. The rules are in docs/sweeps.md ("Verdicts"):

- the paper's band is its number within a tolerance (``tolerance``, default
  ±25 % of the value; a claim may state its own with ``tolerance_why``); a
  claim where the paper reports no effect (its number within 5 % of the
  pivot) has the equivalence band pivot ±5 % (``equivalence``) instead;
- one estimator per claim: the printed number is the centre of its
  interval's method (the geometric mean of per-seed ratios with a t
  interval on their logs, the mean of per-seed values with a t interval,
  or, where a per-seed ratio is infinite or undefined, the ratio of the
  arms' means with a paired bootstrap, ``lbsim.stats``); a claim that no
  method can handle is *not computable*, with the reason.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from lbsim.stats import mean_interval, paired_ratio, t_quantile

TOLERANCE = 0.25  # the paper's band: its number ±25 % unless the claim says
EQUIVALENCE = 0.05  # "no effect": within ±5 % of the pivot unless the claim says
MAX_SEEDS = 1000  # seeds-needed estimates stop here

GEOMEAN = "geometric mean of per-seed ratios, t interval on their logs"
MEAN = "mean of per-seed values, t interval"
BOOTSTRAP = "ratio of the arms' means, paired bootstrap (10,000 resamples, fixed seed)"
MODEL = "analytic model, exact " + "(no interval)"
NO_INTERVAL = "(no interval)"  # methods judged on an exact value end with this

CATEGORIES = ("reproduces", "same direction, smaller", "same direction, larger", "paper's effect excluded", "opposite",
              "inconclusive", "no effect, as the paper reports", "an effect the paper does not report", "not computable",
              "not compared")


def category(verdict: str) -> str:
    """The category a verdict string starts with (one of ``CATEGORIES``)."""
    for c in sorted(CATEGORIES, key=len, reverse=True):
        if verdict.startswith(c):
            return c
    raise ValueError(f"verdict {verdict!r} starts with no category")


def _round(x: Optional[float]) -> Optional[float]:
    """A band edge without binary noise (0.9, not 0.8999999999999999)."""
    return None if x is None else float(f"{x:.12g}")


def _num(x: Any) -> Optional[float]:
    """A JSON number: None for NaN or infinity."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------- the paper's band

def paper_band(claim: dict, pivot: Optional[float]) -> dict:
    """The paper's side of a claim: what it expects (``effect``, ``no
    effect``, ``greater``, ``less`` or, without a pivot, ``value``), its
    band and the tolerance behind it."""
    paper, expect, kind = claim.get("paper"), claim.get("expect"), claim.get("kind", "ratio")
    for k in ("tolerance", "equivalence"):
        if k in claim and not str(claim.get("tolerance_why", "")).strip():
            raise ValueError(f"{k}: a claim's own {k} needs its reason in tolerance_why")
    if paper is None:
        if expect not in ("greater", "less"):
            return {"expects": None, "band_low": None, "band_high": None, "tolerance": None}
        # the paper states a direction only: its band is that side of the pivot
        lo, hi = (pivot, None) if expect == "greater" else (None, pivot)
        return {"expects": expect, "band_low": lo, "band_high": hi, "tolerance": None}
    if "argmax" in claim:
        # where a curve peaks: a position, not an effect against a pivot
        tol = claim.get("tolerance", 0.1 * (max(claim["values"]) - min(claim["values"])))
        why = claim.get("tolerance_why", "a tenth of the searched range")
        return {"expects": "value", "band_low": paper - tol, "band_high": paper + tol, "tolerance": tol, "tolerance_why": why}
    scale = max(abs(pivot), 1.0)
    no_effect = abs(paper - pivot) < EQUIVALENCE * scale and not (kind in ("value", "model") and pivot == 0 and paper != 0)
    if no_effect:
        eq = claim.get("equivalence", EQUIVALENCE)
        out = {"expects": "no effect", "band_low": pivot - eq * scale, "band_high": pivot + eq * scale, "tolerance": eq}
        if "equivalence" in claim:
            out["tolerance_why"] = claim.get("tolerance_why", "")
        return out
    tol = claim.get("tolerance", TOLERANCE)
    lo, hi = sorted((paper * (1 - tol), paper * (1 + tol)))
    out = {"expects": "effect", "band_low": lo, "band_high": hi, "tolerance": tol}
    if "tolerance" in claim:
        out["tolerance_why"] = claim.get("tolerance_why", "")
    return out


# ---------------------------------------------------------------- the estimate

def estimate(kind: str, per_seed: list, num: Optional[list] = None, den: Optional[list] = None) -> dict:
    """Our number, its interval and the method that gives both, from the
    per-seed values (``num``/``den``: the arms' per-seed means of a ratio,
    for the bootstrap). ``reason`` is set when no method applies."""
    n = len(per_seed)
    nan = {"ours": None, "ci_low": None, "ci_high": None, "method": None, "seeds": n}
    if n < 2:
        # one seed: its value is our number (what either method's centre
        # would be), but there is no interval to judge
        one = per_seed[0] if n and per_seed[0] is not None and math.isfinite(per_seed[0]) else None
        if one is not None and kind in ("ratio", "ratio2") and one <= 0:
            one = None
        method = (GEOMEAN if kind in ("ratio", "ratio2") else MEAN) if one is not None else None
        return {**nan, "ours": one, "method": method, "reason": f"{n} seed{'s' if n != 1 else ''}: no interval without two"}
    finite = all(x is not None and math.isfinite(x) for x in per_seed)
    if kind in ("ratio", "ratio2"):
        if finite and all(x > 0 for x in per_seed):
            r = paired_ratio([1.0] * n, per_seed)
            return {"ours": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "method": GEOMEAN, "seeds": n}
        bad = [i + 1 for i, x in enumerate(per_seed) if x is None or not math.isfinite(x) or x <= 0]
        if kind == "ratio" and num is not None and den is not None:
            if not all(v is not None and math.isfinite(v) for v in num + den):
                missing = [i + 1 for i, (a, b) in enumerate(zip(num, den)) if a is None or b is None or not (math.isfinite(a) and math.isfinite(b))]
                return {**nan, "reason": f"the statistic is undefined in seed(s) {', '.join(map(str, missing))} of {n}"}
            if sum(den) == 0:
                return {**nan, "reason": "the denominator's statistic is 0 in every seed"}
            r = paired_ratio(den, num)
            if not r.ci_low <= r.ratio <= r.ci_high:  # a percentile interval need not hold its centre
                return {**nan, "reason": f"the bootstrap interval {r.ci_low:.3g}-{r.ci_high:.3g} does not hold the ratio of means "
                        f"{r.ratio:.3g} with {n} seeds"}
            return {"ours": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "method": BOOTSTRAP, "seeds": n}
        return {**nan, "reason": f"the per-seed ratio is 0, infinite or undefined in seed(s) {', '.join(map(str, bad))} of {n}"
                + (" and the arms' per-seed values are not in the committed data" if kind == "ratio" else "")}
    if not finite:
        bad = [i + 1 for i, x in enumerate(per_seed) if x is None or not math.isfinite(x)]
        return {**nan, "reason": f"the value is undefined in seed(s) {', '.join(map(str, bad))} of {n}"}
    r = mean_interval(per_seed)
    return {"ours": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "method": MEAN, "seeds": n}


# ---------------------------------------------------------------- the verdict

def seeds_needed(obj: dict) -> Optional[int]:
    """Seeds the observed spread would need for the interval to decide the
    claim (exclude the pivot, or the band, on either side), with our
    estimate where it is; None when no number of seeds would (our estimate
    on the boundary) or more than ``MAX_SEEDS``."""
    m, pivot, lo_b, hi_b = obj["ours"], obj.get("pivot"), obj.get("band_low"), obj.get("band_high")
    log = obj["method"] == GEOMEAN and all(x is None or x > 0 for x in (m, pivot, lo_b, hi_b))
    f = math.log if log else (lambda x: x)
    # the distance from our estimate to the nearest boundary whose exclusion decides
    if obj["expects"] == "no effect":
        d = min(abs(f(m) - f(lo_b)), abs(f(m) - f(hi_b)))
    else:
        d = abs(f(m) - f(pivot)) if pivot is not None else 0.0
        edge = lo_b if (obj["paper_side"] > 0) else hi_b
        if edge is not None and (f(edge) - f(m)) * obj["paper_side"] > 0:  # between the pivot and the band
            d = max(d, abs(f(edge) - f(m)))
    if d <= 0:
        return None
    n_obs = obj["seeds"]
    if obj["method"] in (GEOMEAN, MEAN):
        xs = [f(x) for x in obj["per_seed"]]
        mean = sum(xs) / n_obs
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n_obs - 1))
        if sd == 0:
            return n_obs
        # t > z, so no fewer seeds than the normal approximation needs
        start = max(2, math.ceil((1.959964 * sd / d) ** 2))
        for n in range(start, MAX_SEEDS + 1):
            if t_quantile(0.975, n - 1) * sd / math.sqrt(n) < d:
                return n
        return None
    # the bootstrap: its half-width shrinks as 1 / sqrt(seeds)
    h = max(obj["ci_high"] - m, m - obj["ci_low"])
    n = math.ceil(n_obs * (h / d) ** 2)
    return n if n <= MAX_SEEDS else None


def verdict_of(obj: dict) -> str:
    """The verdict a claim object's own fields give (docs/sweeps.md,
    "Verdicts"): the interval [ci_low, ci_high] against the pivot and the
    band [band_low, band_high] (None: unbounded on that side); a claim
    without an interval is judged on ``ours`` when its method is exact
    (the model, or one run per point)."""
    if obj.get("not_compared"):
        return "not compared: " + obj["not_compared"]
    if obj.get("reason"):
        return "not computable: " + obj["reason"]
    m, lo, hi = obj["ours"], obj["ci_low"], obj["ci_high"]
    if m is None or obj["expects"] is None:
        return "not computable: " + ("the paper gives no number or direction" if obj["expects"] is None else "no value")
    if lo is None or hi is None:
        if not str(obj["method"]).endswith(NO_INTERVAL):
            return "not computable: no interval"
        lo = hi = m
    pivot, b_lo, b_hi = obj.get("pivot"), obj.get("band_low"), obj.get("band_high")
    inf = math.inf
    b_lo = -inf if b_lo is None else b_lo
    b_hi = inf if b_hi is None else b_hi
    if obj["expects"] == "value":  # a position: in the band or not
        return "reproduces" if hi >= b_lo and lo <= b_hi else "paper's effect excluded"
    if obj["expects"] == "no effect":
        if b_lo <= lo and hi <= b_hi:
            return "no effect, as the paper reports"
        if hi < b_lo or lo > b_hi:
            return "an effect the paper does not report"
        return _inconclusive(obj)
    s = obj["paper_side"]  # +1: the paper's effect is above the pivot, -1: below
    # in effect terms (how far past the pivot on the paper's side)
    L, H = sorted((s * (lo - pivot), s * (hi - pivot)))
    BL, BH = sorted((s * (b_lo - pivot), s * (b_hi - pivot)))
    if H < 0:
        return "opposite"
    if L > 0:
        if H < BL:
            return f"same direction, smaller ({_share(obj)} of the paper's effect)"
        if L > BH:
            return f"same direction, larger ({_share(obj)} of the paper's effect)"
        return "reproduces"
    if H < BL:
        return "paper's effect excluded"
    return _inconclusive(obj)


def _share(obj: dict) -> str:
    return f"{(obj['ours'] - obj['pivot']) / (obj['paper'] - obj['pivot']):.0%}".replace("%", " %")


def _on_edge(obj: dict) -> bool:
    m = obj["ours"]
    return any(x is not None and math.isclose(m, x, rel_tol=1e-12, abs_tol=1e-15) for x in (obj.get("pivot"), obj.get("band_low"), obj.get("band_high")))


def _inconclusive(obj: dict) -> str:
    if str(obj["method"]).endswith(NO_INTERVAL):
        return "inconclusive (an exact value on the band's edge)"
    n = seeds_needed(obj)
    if n is None and _on_edge(obj):
        return "inconclusive (our value sits on the pivot or the band's edge: no number of seeds decides)"
    if n is None:
        return f"inconclusive (more than {MAX_SEEDS} seeds would be needed at this spread)"
    return f"inconclusive (about {n} seeds would decide at this spread)"


# ---------------------------------------------------------------- claim objects

def claim_object(claim: dict, pivot: Optional[float], est: dict, per_seed: list, experiment: str,
                 num: Optional[list] = None, den: Optional[list] = None, not_compared: Optional[str] = None) -> dict:
    """One claim as data, its verdict included."""
    band = paper_band(claim, pivot)
    paper = claim.get("paper")
    obj = {
        "figure": str(claim.get("figure", "")),
        "claim": claim.get("quote", ""),
        "statement": statement_id(experiment, claim),
        "kind": claim.get("kind", "ratio"),
        "stat": None if claim.get("kind") == "model" else claim.get("stat", "fct_us.mean"),
        "paper": paper,
        "expects": band["expects"],
        "pivot": pivot,
        "paper_side": _side(paper, band["expects"], pivot),
        "band_low": _round(band["band_low"]),
        "band_high": _round(band["band_high"]),
        "tolerance": band["tolerance"],
        "ours": _num(est.get("ours")),
        "ci_low": _num(est.get("ci_low")),
        "ci_high": _num(est.get("ci_high")),
        "method": est.get("method"),
        "seeds": est.get("seeds", len(per_seed)),
        "per_seed": [_num(x) for x in per_seed],
    }
    if band.get("tolerance_why"):
        obj["tolerance_why"] = band["tolerance_why"]
    if num is not None and obj["method"] == BOOTSTRAP:
        obj["per_seed_num"] = [_num(x) for x in num]
        obj["per_seed_den"] = [_num(x) for x in den]
    if est.get("reason"):
        obj["reason"] = est["reason"]
    if not_compared:
        obj["not_compared"] = not_compared
    obj["verdict"] = verdict_of(obj)
    return obj


def _side(paper: Optional[float], expects: Optional[str], pivot: Optional[float]) -> Optional[int]:
    """+1 when the paper's effect lies above the pivot, -1 below."""
    if pivot is None or expects in (None, "value", "no effect"):
        return None
    if paper is None:
        return 1 if expects == "greater" else -1
    return 1 if paper >= pivot else -1


def statement_id(experiment: str, claim: dict, previous: Optional[str] = None) -> str:
    """The id of the distinct paper statement a claim tests: the claim's
    ``statement`` if given; the previous claim's when the quote starts with
    "(same)"; else the quote without the bracketed notes that say where we
    test it (the same sentence tested at several loads or in several
    figures is one statement)."""
    import re

    if claim.get("statement"):
        return f"{experiment}:{claim['statement']}"
    quote = claim.get("quote", "")
    if quote.startswith("(same)") and previous:
        return previous
    q = re.sub(r"\s*\[[^\]]*\]\s*", " ", quote).strip().lower()
    q = re.sub(r"[^a-z0-9%]+", "-", q).strip("-")[:80]
    return f"{experiment}:{q}"


def link_statements(experiment: str, claims: list[dict], objs: list[dict]) -> list[dict]:
    """Sets each object's ``statement`` in the order of the sweep's claims
    (a "(same)" quote continues the statement before it)."""
    prev = None
    for c, o in zip(claims, objs):
        prev = o["statement"] = statement_id(experiment, c, prev)
    return objs


def recheck(obj: dict) -> list[str]:
    """What is wrong with a claim object, from its own fields: its estimate
    recomputed from ``per_seed`` (and the arms' values for the bootstrap),
    ``ci_low <= ours <= ci_high``, and its verdict."""
    errs = []
    if obj["ci_low"] is not None and obj["ours"] is not None and not (obj["ci_low"] <= obj["ours"] <= obj["ci_high"]):
        errs.append(f"ours {obj['ours']} outside [{obj['ci_low']}, {obj['ci_high']}]")
    if obj["method"] in (GEOMEAN, MEAN, BOOTSTRAP):
        est = estimate(obj["kind"], obj["per_seed"], obj.get("per_seed_num"), obj.get("per_seed_den"))
        for k in ("ours", "ci_low", "ci_high", "method"):
            a, b = est.get(k), obj[k]
            if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
                continue
            if a != b:
                errs.append(f"{k}: {b} in the object, {a} from its per-seed values")
    v = verdict_of(obj)
    if v != obj["verdict"]:
        errs.append(f"verdict {obj['verdict']!r}, the rules give {v!r}")
    return errs


# ---------------------------------------------------------------- evaluation on runs

class NotInData(KeyError):
    """A per-run statistic the committed data does not hold (it needs the
    run's tables, in the results catalog)."""


def _ratio(a: float, b: float) -> float:
    """a / b; infinite when only b is 0, NaN when both are."""
    if b == 0:
        return math.inf if a > 0 else math.nan
    return a / b


def evaluate(runs, claim: dict, experiment: str = "") -> dict:
    """A claim's object (``claim_object``) from runs (``analysis.Runs`` on
    the catalog, or ``CommittedRuns`` on the committed data). Kinds:

    - ratio: stat(a) / stat(b) (e.g. ECMP's FCT over Clove's: "3x better");
    - ratio2: (stat(a) / stat(b)) / (stat(c) / stat(d));
    - gain_captured: (stat(base) - stat(x)) / (stat(base) - stat(best));
    - value: stat(a);
    - all: every point ``where`` selects, one run each, against ``pivot``
      (``expect = "greater"``: all above it, judged on the smallest);
    - model: the analytic model, f(a), f(a) / f(b), or with ``argmax`` the
      value of that argument where f(a) peaks.

    Ratios pivot on 1, the other kinds on 0, unless the claim gives ``pivot``.
    """
    from lbsim.experiments.analysis import model_argmax, model_call, overloaded

    where = claim.get("where", {})
    stat = claim.get("stat", "fct_us.mean")
    kind = claim.get("kind", "ratio")
    if kind == "model":
        f, args = claim["function"], claim.get("a", {})
        if "argmax" in claim:
            ours, pivot = model_argmax(f, args, claim["argmax"], claim["values"]), None
        elif "b" in claim:
            ours, pivot = _ratio(model_call(f, args), model_call(f, claim["b"])), claim.get("pivot", 1.0)
        else:
            ours, pivot = model_call(f, args), claim.get("pivot", 0.0)
        return claim_object(claim, pivot, {"ours": ours, "method": MODEL, "seeds": 0}, [], experiment)
    pivot = claim.get("pivot", 1.0 if kind in ("ratio", "ratio2") else 0.0)
    o = overloaded(runs.sw.spec, where)
    if o is not None:
        why = "overload (" + o.get("why", "offered load above capacity") + ")"
        return claim_object(claim, pivot, {"seeds": 0}, [], experiment, not_compared=why)
    if kind == "all":
        pts = runs.select(where)
        if any(p.axes.get("seed") != pts[0].axes.get("seed") for p in pts):
            raise ValueError("kind all: one run per point (several seeds per point are not supported)")
        vals = [runs.stat(p, stat) for p in pts]
        greater = claim.get("expect", "greater") == "greater"
        ours = (min if greater else max)(vals) if vals and all(math.isfinite(v) for v in vals) else math.nan
        method = f"{'smallest' if greater else 'largest'} of the {len(vals)} points' values, one run each {NO_INTERVAL}"
        est = {"ours": ours, "method": method, "seeds": 1}
        if not math.isfinite(ours):
            est = {"seeds": 1, "reason": "a point has no value"}
        obj = claim_object(claim, pivot, est, vals, experiment)
        obj["points"] = [{k: v for k, v in p.axes.items() if k != "seed"} for p in pts]
        return obj

    def ms(sel: dict, sd) -> float:
        return runs.mean_stat({**where, **sel, "seed": sd}, stat)[0]

    # the seeds every selection of the claim has run (`reproduce --until`
    # may have added seeds to some points only)
    seeds = sorted(set.intersection(*({p.axes["seed"] for p in runs.select(sel) if "seed" in p.axes}
                                      for sel in selections(claim))))
    per_seed, num, den = [], [], []
    for sd in seeds:
        if kind == "ratio":
            a, b = ms(claim["a"], sd), ms(claim["b"], sd)
            num.append(a)
            den.append(b)
            per_seed.append(_ratio(a, b))
        elif kind == "gain_captured":
            b_, x_, best_ = ms(claim["base"], sd), ms(claim["x"], sd), ms(claim["best"], sd)
            num.append(b_ - x_)
            den.append(b_ - best_)
            per_seed.append((b_ - x_) / (b_ - best_) if b_ != best_ else math.nan)
        elif kind == "value":
            per_seed.append(ms(claim["a"], sd))
        elif kind == "ratio2":
            per_seed.append(_ratio(_ratio(ms(claim["a"], sd), ms(claim["b"], sd)), _ratio(ms(claim["c"], sd), ms(claim["d"], sd))))
        else:
            raise ValueError(f"claim kind {kind!r} unknown")
    if kind == "gain_captured" and seeds:
        # the whole gain (base - best) against base, means over the seeds:
        # a share of a gain smaller than the seed noise means nothing
        base = sum(ms(claim["base"], sd) for sd in seeds) / len(seeds)
        gain = abs(sum(den)) / len(seeds) / base if base else math.inf
        if gain < 0.05:
            return claim_object(claim, pivot, {"seeds": len(seeds), "reason": f"the whole gain is {gain:.1%}, within the seed noise"},
                                per_seed, experiment)
    est = estimate(kind, per_seed, num if kind == "ratio" else None, den if kind == "ratio" else None)
    return claim_object(claim, pivot, est, per_seed, experiment, num if kind == "ratio" else None, den if kind == "ratio" else None)


SELECTIONS = ("a", "b", "c", "d", "base", "x", "best")  # a claim's selections, beside its where


def selections(claim: dict) -> list[dict]:
    """The runs a claim's number is computed from: one selection (axis
    values) per arm (``a``, ``b``, ... within ``where``), or ``where``."""
    where = claim.get("where", {})
    return [{**where, **claim[k]} for k in SELECTIONS if isinstance(claim.get(k), dict)] or [where]


def from_per_seed(claim: dict, prev: dict, experiment: str, missing: str) -> dict:
    """A claim's object rebuilt from the per-seed values an earlier object
    kept (for a statistic the committed data does not hold): the same rules
    on the same numbers, marked as not recomputable from the data."""
    kind = claim.get("kind", "ratio")
    pivot = claim.get("pivot", 1.0 if kind in ("ratio", "ratio2") else 0.0)
    per_seed = [math.nan if x is None else x for x in prev["per_seed"]]
    num, den = prev.get("per_seed_num"), prev.get("per_seed_den")
    if prev.get("not_compared"):
        obj = claim_object(claim, pivot, {"seeds": 0}, [], experiment, not_compared=prev["not_compared"])
    elif prev.get("reason") and not prev.get("per_seed"):
        obj = claim_object(claim, pivot, {"seeds": prev.get("seeds", 0), "reason": prev["reason"]}, [], experiment)
    else:
        est = estimate(kind, per_seed, num, den)
        obj = claim_object(claim, pivot, est, per_seed, experiment, num, den)
    obj["data"] = f"per-seed values kept from the last report made with the run catalog: {missing} is not in the committed data"
    obj["verdict"] = verdict_of(obj)
    return obj


class CommittedRuns:
    """The runs of a sweep as the repository keeps them: the index
    (``reproduction/data/<name>.parquet``: axes, hash and the summary's
    numbers flattened) and, beside it, ``<name>.stats.json``: per run, the
    statistics the claims use that need the run's tables. Same lookups as
    ``analysis.Runs``; a statistic in neither raises ``NotInData``."""

    def __init__(self, sw, data_dir):
        import json
        from pathlib import Path

        import pandas as pd

        from lbsim.experiments.sweep import Point

        self.sw = sw
        data_dir = Path(data_dir)
        idx = pd.read_parquet(data_dir / f"{sw.catalog_name}.parquet")
        axes = [c for c in idx.columns if c.startswith("axis.")]
        cols = {c: idx[c].tolist() for c in axes}
        self.points = [Point(axes={c[5:]: cols[c][i] for c in axes}, scenario={}, text="", hash=h) for i, h in enumerate(idx["hash"])]
        self.rows = {h: r for h, r in zip(idx["hash"], idx.to_dict("records"))}
        self.buckets = list(dict.fromkeys(c.split("]")[0] + "]" for c in idx.columns if c.startswith("bucket[")))
        f = data_dir / f"{sw.catalog_name}.stats.json"
        self.extra = json.loads(f.read_text()) if f.exists() else {}

    def select(self, where: dict) -> list:
        from lbsim.experiments.analysis import Runs

        return Runs.select(self, where)

    def mean_stat(self, where: dict, name: str) -> tuple[float, float, float, int]:
        from lbsim.experiments.analysis import Runs

        return Runs.mean_stat(self, where, name)

    def column(self, name: str) -> Optional[str]:
        """The index column of a dotted summary path (``buckets.N.x`` is the
        N-th size bucket's ``bucket[label].x``)."""
        parts = name.split(".")
        if parts[0] == "buckets" and len(parts) > 2 and parts[1].isdigit():
            i = int(parts[1])
            return f"{self.buckets[i]}.{'.'.join(parts[2:])}" if i < len(self.buckets) else None
        return name

    def stat(self, p, name: str) -> float:
        extra = self.extra.get(p.hash, {})
        if name in extra:
            return math.nan if extra[name] is None else float(extra[name])
        row = self.rows[p.hash]
        if name == "nonloss_fr_per_packet":
            fr, by_loss, sent = row["transport.fast_recoveries"], row["transport.fast_recoveries_by_loss"], row["network.packets_sent"]
            return (fr - by_loss) / max(sent, 1)
        col = self.column(name)
        if col not in row:
            raise NotInData(name)
        v = row[col]
        return math.nan if v is None else float(v)
