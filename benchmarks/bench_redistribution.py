"""Redistribution benchmark and experiments (docs/experiments/redistribution.md).

    PYTHONPATH=src python benchmarks/bench_redistribution.py              # speed: dense 100 x 100
    PYTHONPATH=src python benchmarks/bench_redistribution.py --ratios 1000  # cost / lower bound
    PYTHONPATH=src python benchmarks/bench_redistribution.py --agreement 200  # estimate vs simulator
    PYTHONPATH=src python benchmarks/bench_redistribution.py --stress 1000    # ratio, harder cases
    PYTHONPATH=src python benchmarks/bench_redistribution.py --scaling         # one pattern, x = 10..80 MB

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

from topocast.experiments.redistribute import agreement_experiment, ratio_experiment, stress_experiment  # noqa: E402
from topocast.planners.redistribute.ggp import peel_schedule, unit_for  # noqa: E402
from topocast.redistribute import dense_pattern, lower_bound, random_pattern, validate_schedule  # noqa: E402
from topocast.redistribute.kpbs import brute_force_time  # noqa: E402
from topocast.redistribute.matrix import MB  # noqa: E402

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
                rows.append(
                    {
                        "algorithm": name,
                        "k": k,
                        "beta": beta,
                        "seconds": best,
                        "steps": s.n_steps,
                        "cost_over_bound": s.cost(beta, NIC) / lb.total,
                    }
                )
    return rows


def scaling(seed: int = 0, k: int = 5, beta: float = 0.01) -> list[dict]:
    """One random pattern of the paper (10 x 10 hosts, 30 messages, sizes U[10 MB, x MB],
    ``seed``) for x = 10..80 MB: the same draws scaled with x, as in the paper's Figs. 4 and 6.
    Model predictions in seconds; gain = (brute force - best schedule at ``beta``) / brute force."""
    rows = []
    for x in range(10, 90, 10):
        m = random_pattern(10, 10, 30, x * MB, seed=seed).matrix
        bf = brute_force_time(m, k, nic=NIC)
        cost = {}
        for name, bott in (("ggp", False), ("oggp", True)):
            for b in (0.0, beta):
                s = peel_schedule(m, k, unit=unit_for(b, NIC), bottleneck=bott)
                validate_schedule(s, m, k)
                cost[name, b] = s.cost(b, NIC)
        best = min(cost["ggp", beta], cost["oggp", beta])
        rows.append(
            {
                "x_mb": x,
                "lower_bound": lower_bound(m, k, nic=NIC).total,
                "brute_force": bf,
                "ggp_beta0": cost["ggp", 0.0],
                "ggp_beta": cost["ggp", beta],
                "oggp_beta": cost["oggp", beta],
                "gain_beta": (bf - best) / bf,
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratios", type=int, default=0, metavar="N", help="run the ratio experiment on N patterns")
    ap.add_argument("--agreement", type=int, default=0, metavar="N", help="estimate vs simulator on N patterns")
    ap.add_argument("--stress", type=int, default=0, metavar="N", help="ratio on N patterns beyond the paper's setting")
    ap.add_argument("--scaling", action="store_true", help="one pattern, sizes scaled with x = 10..80 MB")
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
    if args.scaling:
        rows = scaling()
        if args.json:
            print(json.dumps(rows, indent=1))
            return 0
        print("random_pattern(10, 10, 30, x MB, seed=0), k = 5, NIC 100 Mbit/s; seconds")
        print(
            "| x (MB) | lower bound | brute force η_o | GGP, β = 0 | GGP, β = 10 ms | OGGP, β = 10 ms | gain, β = 10 ms |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['x_mb']} | {r['lower_bound']:.2f} | {r['brute_force']:.2f} | {r['ggp_beta0']:.2f} | "
                f"{r['ggp_beta']:.2f} | {r['oggp_beta']:.2f} | {100 * r['gain_beta']:.1f} % |"
            )
        return 0
    rows = speed(args.repeat)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"dense 100 x 100, sizes U[10 MB, 80 MB], NIC 100 Mbit/s (best of {args.repeat} runs)")
    print(f"{'algorithm':9} {'k':>4} {'beta (s)':>8} {'seconds':>8} {'steps':>6} {'cost/bound':>10}")
    for r in rows:
        print(
            f"{r['algorithm']:9} {r['k']:>4} {r['beta']:>8g} {r['seconds']:>8.3f} {r['steps']:>6} {r['cost_over_bound']:>10.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
