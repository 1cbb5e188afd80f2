"""lbsim: a fast, deterministic packet-level simulator of datacenter fabrics
for comparing load-balancing schemes.

    >>> import lbsim
    >>> res = lbsim.run("examples/small.toml", seed=2, set=["workload.load=0.7"])
    >>> res.flows.fct_us.mean(), res.summary["fct_us"]["p99"]

The simulator is Rust (``lbsim._lbsim``); this package only loads scenarios,
calls it, and turns its columns into Arrow / pandas tables.
"""

from lbsim._api import LbsimError, LongRunWarning, Result, ScenarioError, explain, flows, load_scenario, run, schemes, validate
from lbsim._lbsim import __version__, ag_optimal_granularity, ag_rate_gbps, ag_reorder_probability
from lbsim.compare import compare

__all__ = [
    "LbsimError",
    "LongRunWarning",
    "Result",
    "ScenarioError",
    "ag_optimal_granularity",
    "ag_rate_gbps",
    "ag_reorder_probability",
    "compare",
    "explain",
    "flows",
    "load_scenario",
    "run",
    "schemes",
    "validate",
    "__version__",
]
