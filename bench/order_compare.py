"""Do two lbsim-run builds give the same results in distribution? Runs both
on one scenario over many seeds (each seed: the same flows in both builds,
since the workload has its own random stream) and prints, per metric, the
first build's mean over seeds and the second's paired difference: mean
difference in percent and its t statistic (n - 1 degrees of freedom).
For changes that alter results in detail but should not in distribution
(another event order, another random stream):

    python3 bench/order_compare.py /tmp/old/lbsim-run \
        target/release/lbsim-run --seeds 24 examples/b1.toml workload.flows=2000
"""

import argparse
import json
import math
import statistics
import subprocess


def metrics(summary):
    out = {"mean FCT, all (us)": summary["fct_us"]["mean"], "p99 FCT, all (us)": summary["fct_us"]["p99"]}
    for b in summary["buckets"]:
        out[f"mean FCT, {b['bucket']} (us)"] = b["fct_us"]["mean"]
        out[f"p99 FCT, {b['bucket']} (us)"] = b["fct_us"]["p99"]
    out["drops"] = summary["network"]["drops"]["total"]
    return out


def run(binary, scenario, sets, seed):
    text = subprocess.run([binary, scenario, *sets, f"seed={seed}"], check=True, capture_output=True, text=True).stdout
    s = json.loads(text)
    if not s["conservation"]["ok"]:
        raise SystemExit(f"{binary} seed {seed}: packets not conserved")
    return metrics(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="first lbsim-run (the reference)")
    ap.add_argument("b", help="second lbsim-run")
    ap.add_argument("scenario")
    ap.add_argument("sets", nargs="*", help="key=value overrides")
    ap.add_argument("--seeds", type=int, default=24)
    args = ap.parse_args()
    a = [run(args.a, args.scenario, args.sets, s) for s in range(1, args.seeds + 1)]
    b = [run(args.b, args.scenario, args.sets, s) for s in range(1, args.seeds + 1)]
    print(f"| metric | first, mean over {args.seeds} seeds | second minus first (t, {args.seeds - 1} dof) |")
    print("|---|---|---|")
    for m in a[0]:
        base = statistics.mean(x[m] for x in a)
        d = [y[m] - x[m] for x, y in zip(a, b)]
        sd = statistics.stdev(d)
        t = statistics.mean(d) / (sd / math.sqrt(len(d))) if sd > 0 else float("nan")
        print(f"| {m} | {base:,.1f} | {100 * statistics.mean(d) / base:+.1f} % (t {t:+.2f}) |")


if __name__ == "__main__":
    main()
