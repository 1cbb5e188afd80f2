"""``lbsim.stats.summary_value``: the one reader of dotted summary.json
paths, used by ``lbsim compare`` metrics and by the reproductions' claims."""

import math

from lbsim.stats import summary_value

SUMMARY = {
    "fct_us": {"mean": 12, "p99": 40.5, "n": 0},
    "jobs": [{"busbw_gbps": {"mean": 87.5}}, {"busbw_gbps": {"mean": None}}],
    "conservation": {"ok": True},
    "scheme": {"name": "ecmp"},
}


def test_numbers_at_dotted_paths_and_list_indices():
    assert summary_value(SUMMARY, "fct_us.mean") == 12.0
    assert isinstance(summary_value(SUMMARY, "fct_us.mean"), float)
    assert summary_value(SUMMARY, "fct_us.p99") == 40.5
    assert summary_value(SUMMARY, "fct_us.n") == 0.0  # zero is a value, not a miss
    assert summary_value(SUMMARY, "jobs.0.busbw_gbps.mean") == 87.5


def test_none_where_the_path_leads_nowhere_or_to_no_number():
    for path in ("fct_us.p50", "nope.mean", "jobs.2.busbw_gbps.mean", "jobs.x.busbw_gbps", "jobs.1.busbw_gbps.mean",
                 "conservation.ok", "scheme.name", "fct_us", "fct_us.mean.deeper", "jobs.-1.busbw_gbps.mean"):
        assert summary_value(SUMMARY, path) is None, path


def test_claims_read_a_missing_statistic_as_nan(tmp_path):
    import json

    from lbsim.experiments.analysis import run_stat

    (tmp_path / "summary.json").write_text(json.dumps(SUMMARY))
    assert run_stat(tmp_path, "jobs.0.busbw_gbps.mean") == 87.5
    assert math.isnan(run_stat(tmp_path, "jobs.3.busbw_gbps.mean"))
