"""The probe judged on a family of random networks (``generators.random_network``) on the
fake max-min network, a few fixed seeds (the benchmark draws fresh ones:
``benchmarks/bench_probe.py --family fake``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_the_family_benchmark_replays_given_networks():
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "bench_probe.py"), "--family", "fake", "--nets", "3,5"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")},
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [r["spec"] for r in rows] == ["net:3:8:32:10:1000", "net:5:8:32:10:1000"]
    assert all(0 < r["stable_sim_worst"] <= 1.5 and r["rounds"] > 0 for r in rows)
    assert "summary: " in out.stdout and "batch seed" in out.stdout
