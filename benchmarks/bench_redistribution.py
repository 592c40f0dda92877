"""Redistribution benchmark and experiments (docs/experiments/redistribution.md).

    PYTHONPATH=src python benchmarks/bench_redistribution.py              # speed: dense 100 x 100
    PYTHONPATH=src python benchmarks/bench_redistribution.py --ratios 1000  # cost / lower bound
    PYTHONPATH=src python benchmarks/bench_redistribution.py --agreement 200  # estimate vs simulator
    PYTHONPATH=src python benchmarks/bench_redistribution.py --stress 1000    # ratio, harder cases

Speed: a dense 100 x 100 matrix (sizes uniform in [10 MB, 80 MB], NIC 100 Mbit/s) scheduled by
GGP and OGGP for k = 10 and k = 100, beta = 0 and beta = 0.1 s; the target is < 2 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from topocast.planners.redistribute.ggp import peel_schedule, unit_for  # noqa: E402
from topocast.redistribution import dense_pattern, lower_bound, validate_schedule  # noqa: E402
from topocast.redistribution.experiment import agreement_experiment, ratio_experiment, stress_experiment  # noqa: E402

NIC = 100e6 / 8


def speed(repeat: int = 3) -> list[dict]:
    m = dense_pattern(100, 100, seed=0).matrix
    rows = []
    for k in (10, 100):
        for beta in (0.0, 0.1):
            for name, bott in (("ggp", False), ("oggp", True)):
                best = float("inf")
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    s = peel_schedule(m, k, unit=unit_for(beta, NIC), bottleneck=bott)
                    best = min(best, time.perf_counter() - t0)
                validate_schedule(s, m, k)
                lb = lower_bound(m, k, nic=NIC, beta=beta)
                rows.append({"algorithm": name, "k": k, "beta": beta, "seconds": best, "steps": s.n_steps,
                             "cost_over_bound": s.cost(beta, NIC) / lb.total})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratios", type=int, default=0, metavar="N", help="run the ratio experiment on N patterns")
    ap.add_argument("--agreement", type=int, default=0, metavar="N", help="estimate vs simulator on N patterns")
    ap.add_argument("--stress", type=int, default=0, metavar="N", help="ratio on N patterns beyond the paper's setting")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.ratios:
        res = ratio_experiment(args.ratios)
        print(json.dumps(res, indent=1, default=float))
        return 0
    if args.stress:
        print(json.dumps(stress_experiment(args.stress), indent=1, default=float))
        return 0
    if args.agreement:
        res = {str(b): agreement_experiment(args.agreement, beta=b) for b in (0.0, 0.05)}
        print(json.dumps(res, indent=1, default=float))
        return 0
    rows = speed(args.repeat)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("dense 100 x 100, sizes U[10 MB, 80 MB], NIC 100 Mbit/s (best of %d runs)" % args.repeat)
    print(f"{'algorithm':9} {'k':>4} {'beta (s)':>8} {'seconds':>8} {'steps':>6} {'cost/bound':>10}")
    for r in rows:
        print(f"{r['algorithm']:9} {r['k']:>4} {r['beta']:>8g} {r['seconds']:>8.3f} {r['steps']:>6} {r['cost_over_bound']:>10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
