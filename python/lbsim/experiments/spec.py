"""What a sweep file holds: every section, the keys of each section whose
keys are fixed, and every figure and claim kind with its own keys.

``sweep.load`` refuses a top-level section not listed here (and a section
written in the wrong shape, ``[rule]`` for ``[[rule]]``); the figures and
claims are read by ``analysis.draw`` and ``claims.evaluate``.
docs/sweeps.md documents exactly these sections and keys: a test in
tests/test_sweeps.py fails when the two differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Section:
    array: bool  # [[name]] (an array of tables) rather than [name]
    required: bool
    doc: str
    # key -> one-line meaning; None when the file chooses the names (axes, scenario keys)
    keys: Optional[dict[str, str]]
    # for [[figure]] and [[claim]]: kind -> its own keys (beside `keys`, common to every kind)
    kinds: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def written(self) -> str:
        return "[[{}]]" if self.array else "[{}]"


_LINE = {
    "x": "the axis on the x axis (default load)",
    "stat": "the run statistic plotted (default fct_us.mean)",
    "normalise": "a series value: every line is divided by that series at the same x",
    "scale": "factor applied to every value (default 1)",
    "bound": "{ where, label }: a dashed line of the runs that `where` selects, one point per x",
}

_FCT_CDF = {
    "min_bytes": "only flows of at least this size (default 0)",
    "max_bytes": "only flows smaller than this (default no limit)",
    "class": "only flows of this workload.classes class",
    "scale": "factor applied to each FCT in µs (default 1)",
    "logx": "logarithmic x axis",
}

FIGURE_KINDS: dict[str, dict[str, str]] = {
    "line": _LINE,
    "fct_vs_load": _LINE,
    "cdf": _FCT_CDF,
    "fct_cdf": _FCT_CDF,
    "queue_cdf": {
        "port": "the sampled port (default every sampled queue)",
        "logx": "logarithmic x axis",
    },
    "imbalance_cdf": {
        "prefix": "sampled ports whose name starts with this, one value per window (default L0->S)",
        "per_switch": "a glob over sampled ports, one value per switch and window (instead of prefix)",
        "logx": "logarithmic x axis",
    },
    "all": {},
    "model": {
        "function": "the model function drawn (ag_reorder_probability, ag_rate_gbps, ag_optimal_granularity)",
        "x": "the function's argument on the x axis",
        "x_values": "the values of that argument",
        "series": "the argument varied from line to line (not an axis)",
        "series_values": "its values, one line each",
        "args": "the function's other arguments",
        "label": "the line's legend when there is no series (default the function's name)",
        "sim_argmin": "{ x, over, stat, label }: per value of axis x, the value of axis over with the lowest mean stat",
    },
    "scheme_timeseries": {
        "metric": "the scheme_samples metric, one line per series value (first matching run)",
        "metrics": "several metrics of the first run matching where, one line each (instead of metric)",
        "a": "the pair's first leaf in scheme_samples (default 0)",
        "b": "the pair's second leaf in scheme_samples (default 1)",
    },
    "link_timeseries": {
        "groups": "label = [port, ...]: one line per group, the summed throughput of its sampled ports",
    },
    "bar": {
        "stat": "the run statistic (default fct_us.mean)",
        "stats": "several statistics, grouped bars per series value (instead of stat)",
        "stat_labels": "their legends (default the statistics' names)",
        "scale": "factor applied to every value (default 1)",
    },
    "flow_timeseries": {},
}

CLAIM_KINDS: dict[str, dict[str, str]] = {
    "ratio": {
        "a": "selection of the numerator",
        "b": "selection of the denominator",
    },
    "value": {
        "a": "the selection whose statistic is the claim",
    },
    "ratio2": {
        "a": "numerator of the first ratio",
        "b": "denominator of the first ratio",
        "c": "numerator of the second ratio",
        "d": "denominator of the second ratio",
    },
    "gain_captured": {
        "base": "the selection with no gain (e.g. ECMP)",
        "x": "the selection whose share of the gain is measured",
        "best": "the selection with the whole gain",
    },
    "all": {},
    "model": {
        "function": "the model function (ag_reorder_probability, ag_rate_gbps, ag_optimal_granularity)",
        "a": "its arguments: the claim is f(a)",
        "b": "other arguments: the claim is f(a) / f(b)",
        "argmax": "an argument: the claim is where f(a) peaks over values",
        "values": "the values of the argmax argument searched",
    },
}

SECTIONS: dict[str, Section] = {
    "experiment": Section(False, True, "what the sweep is and its report section's text", {
        "name": "catalog name (default the file's stem)",
        "title": "heading of the report section (default the name)",
        "order": "place in `lbsim reproduce --list` and REPRODUCTION.md (default 999, then by file name)",
        "paper": "the paper and figures reproduced",
        "estimated_minutes": "wall time of the full sweep, shown by `lbsim reproduce --list`",
        "setup": "the setup paragraph of the report section",
        "choices": "the values chosen where the paper is silent",
        "notes": "where the results differ from the paper's and why",
    }),
    "base": Section(False, True, "the scenario every point starts from", None),
    "axes": Section(False, True, "axis = [values]: the points are their cartesian product", None),
    "keys": Section(False, False, "axis = \"dotted.scenario.key\" its values are written to", None),
    "options": Section(False, False, "options.AXIS.VALUE: overrides applied where the axis takes that value", None),
    "rule": Section(True, False, "overrides applied where several axes match", {
        "match": "{ axis = value, ... }: every axis equals its value",
        "set": "{ \"dotted.key\" = value, ... }: the overrides",
    }),
    "exclude": Section(True, False, "points not run: every axis named matches", None),
    "quick": Section(False, False, "the --quick variant", {
        "axes": "{ axis = [values], ... }: replaces those axes' values",
        "set": "{ \"dotted.key\" = value, ... }: overrides applied to every point last",
    }),
    "added_seeds": Section(True, False, "seeds beyond the seed axis at some points (`reproduce --until` writes them)", {
        "where": "{ axis = value or [values], ... }: the points that get the seeds (default every point)",
        "seeds": "[integers]: the seeds added there",
        "why": "what they were added for",
    }),
    "overload": Section(True, False, "points past capacity: shaded in figures, no claim compared", {
        "where": "{ axis = value, ... } the entry covers (default every point)",
        "x": "the axis compared with above (default load)",
        "above": "an x above this is overloaded",
        "why": "the reason shown in the claim's verdict",
    }),
    "figure": Section(True, False, "a figure drawn from the runs", {
        "id": "names the figure and its files",
        "kind": "what is drawn",
        "where": "{ axis = value or [values], ... } selecting the runs (default all)",
        "series": "the axis whose values are the lines or bars (default scheme)",
        "series_order": "those values, in drawing order (default the axis's)",
        "labels": "{ \"value\" = \"legend\", ... }",
        "title": "the figure's title",
        "xlabel": "x axis label",
        "ylabel": "y axis label",
        "logy": "logarithmic y axis",
    }, FIGURE_KINDS),
    "claim": Section(True, False, "a paper's claim beside the runs' number, with a verdict", {
        "figure": "the paper's figure, shown in the claims table",
        "quote": "the paper's words",
        "kind": "how the number is computed (default ratio)",
        "where": "{ axis = value, ... } common to every selection (default all runs)",
        "stat": "the run statistic (default fct_us.mean)",
        "paper": "the paper's number",
        "expect": "greater or less: only the direction is checked (with no paper number)",
        "pivot": "where the effect is measured from (default 1 for ratios, 0 otherwise)",
        "tolerance": "the paper's band: its number within this share of itself (default 0.25)",
        "equivalence": "where the paper reports no effect: the band is the pivot within this share (default 0.05)",
        "tolerance_why": "the reason for a tolerance or equivalence other than the default",
        "statement": "the id of the paper statement tested (default: figure and quote without its [bracketed] note)",
    }, CLAIM_KINDS),
}
