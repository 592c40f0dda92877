"""The command line: JSON contract of compare, errors as one line with exit status 2."""

import json

from topocast.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_json_has_the_design_keys(capsys, tmp_path):
    code, out, err = run(
        capsys,
        "compare",
        "builtin:two-clusters",
        "--size",
        "100MB",
        "--json",
        "--algorithms",
        "flat,depth_first",
        "--plot",
        str(tmp_path / "p.png"),
    )
    assert code == 0, err
    data = json.loads(out)
    assert {"topology", "source", "size_bytes", "bound", "results"} <= set(data)
    assert data["size_bytes"] == 100_000_000
    assert set(data["bound"]) == {"aggregate_bandwidth", "per_host_rate", "kind"}
    assert set(data["ceiling"]) == {"aggregate_bandwidth", "kind"}
    assert data["ceiling"]["aggregate_bandwidth"] <= data["bound"]["aggregate_bandwidth"] * (1 + 1e-12)
    names = [r["algorithm"] for r in data["results"]]
    assert names == ["flat", "depth_first"]
    for r in data["results"]:
        assert {"algorithm", "aggregate_bandwidth", "makespan", "per_host", "of_bound", "of_ceiling"} <= set(r)
        for h, v in r["per_host"].items():
            assert set(v) >= {"time", "rate"}
            assert v["rate"] <= data["bound"]["per_host_rate"][h] * (1 + 1e-9)
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_compare_table(capsys):
    code, out, _ = run(capsys, "compare", "builtin:two-clusters", "--algorithms", "flat")
    assert code == 0
    assert "flat" in out and "bound" in out


def test_unknown_planner_lists_valid_ones(capsys):
    code, out, err = run(capsys, "compare", "builtin:two-clusters", "--algorithms", "deep_first")
    assert code == 2
    assert "valid planners" in err and "depth_first" in err and "did you mean 'depth_first'" in err
    assert "Traceback" not in err


def test_unknown_source_is_a_clear_error(capsys):
    code, _, err = run(capsys, "bounds", "builtin:two-clusters", "--source", "nobody")
    assert code == 2
    assert "--source" in err and "nobody" in err


def test_plan_then_simulate_round_trip(capsys, tmp_path):
    f = tmp_path / "plan.json"
    code, _, err = run(capsys, "plan", "builtin:two-clusters", "-a", "depth_first", "--size", "1MB", "-o", str(f))
    assert code == 0, err
    code, out, err = run(capsys, "simulate", "builtin:two-clusters", "--plan", str(f), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["algorithm"] == "depth_first" and data["size_bytes"] == 1_000_000


def test_allreduce_plan_then_simulate(capsys, tmp_path):
    f = tmp_path / "ar.json"
    code, _, err = run(
        capsys,
        "plan",
        "builtin:two-clusters",
        "--collective",
        "allreduce",
        "-a",
        "ring",
        "--size",
        "8MB",
        "--destinations",
        "s,a1,b1",
        "-o",
        str(f),
    )
    assert code == 0, err
    plan = json.loads(f.read_text())
    assert plan["collective"] == "allreduce"
    assert {t["src"] for t in plan["transfers"]} == {"s", "a1", "b1"}
    code, out, err = run(capsys, "simulate", "builtin:two-clusters", "--plan", str(f), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["per_host"]) == {"s", "a1", "b1"} and data["makespan"] > 0
    code, _, err = run(capsys, "plan", "builtin:two-clusters", "--collective", "allreduce", "-a", "stable")
    assert code == 2 and "valid planners" in err and "ring" in err


def test_planners_listing_has_references(capsys):
    code, out, _ = run(capsys, "planners", "--json")
    assert code == 0
    rows = json.loads(out)
    assert {r["name"] for r in rows} >= {"flat", "depth_first"}
    assert all(r["reference"] for r in rows)


def test_missing_file_is_a_clear_error(capsys, tmp_path):
    code, _, err = run(capsys, "bounds", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "nope.yaml" in err and "Traceback" not in err


def test_docs_planner_table_is_generated_from_the_registry():
    """docs/planners.md must be regenerated when a planner is added (no drift, unlike SimGrid's)."""
    from pathlib import Path

    from topocast.cli.cmd_planners import markdown_table
    from topocast.planners import available_planners

    doc = Path(__file__).resolve().parents[1] / "docs" / "planners.md"
    assert doc.read_text() == markdown_table(available_planners()), (
        "run: topocast planners --markdown > docs/planners.md"
    )


def test_compare_plans_each_planner_once_and_auto_reuses_its_choice(monkeypatch):
    """In compare, auto chooses among the rows already planned and simulated (it plans and
    simulates nothing itself), and auto's row is its choice's row."""
    from topocast.evaluate.compare import compare
    from topocast.planners import available_planners
    from topocast.planners.broadcast import auto
    from topocast.topology import load_topology

    def not_again(info, *args):
        raise AssertionError(f"auto planned {info.name} again")

    monkeypatch.setattr(auto, "_evaluate", not_again)
    topo = load_topology("builtin:two-clusters")
    _, results = compare(topo, topo.hosts[0], 10**8)
    names = [n for n, _ in results]
    assert names == [i.name for i in available_planners("broadcast")]  # table order kept
    rows = {n: r for n, r in results if not isinstance(r, str)}
    others = [n for n in rows if n != "auto"]
    best = min(others, key=lambda n: (rows[n].makespan, -rows[n].aggregate_bandwidth))
    assert rows["auto"].algorithm == "auto"
    assert rows["auto"].makespan <= rows[best].makespan * (1 + 1e-3)
    assert rows["auto"].makespan in {rows[n].makespan for n in others}


def _count_simulations(monkeypatch):
    from topocast.sim import engine

    runs = []
    real = engine._Sim.run

    def counted(self):
        runs.append(self.plan.planner)
        return real(self)

    monkeypatch.setattr(engine._Sim, "run", counted)
    return runs


def test_simulate_optimal_reuses_the_prediction_optimal_made(monkeypatch, capsys):
    """`topocast simulate -a optimal`: optimal simulates its candidates to choose; the command
    reuses the prediction of the one it returns instead of simulating it once more, and the
    figures are those of a fresh simulation of that plan."""
    from topocast import Broadcast, simulate
    from topocast.planners import get_planner
    from topocast.topology import load_topology

    runs = _count_simulations(monkeypatch)
    assert main(["simulate", "builtin:two-clusters", "-a", "optimal", "--size", "100MB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    command_runs = len(runs)
    topo = load_topology("builtin:two-clusters")
    plan = get_planner("broadcast", "optimal")(topo, Broadcast(topo.hosts[0], 10**8))
    simulated = plan.notes["predicted_aggregate_bandwidth"]
    assert command_runs == len(simulated) >= 2  # one per structure optimal compared, none more
    fresh = simulate(plan, topo)
    assert out["aggregate_bandwidth"] == fresh.aggregate_bandwidth and out["algorithm"] == "optimal"
    assert out["makespan"] == fresh.makespan


def test_simulate_with_another_chunk_size_does_not_reuse(monkeypatch, capsys):
    """A prediction made at the plan's chunk size is not one at another: simulated again."""
    runs = _count_simulations(monkeypatch)
    argv = ["simulate", "builtin:two-clusters", "-a", "optimal", "--size", "100MB", "--json"]
    assert main(argv) == 0
    first = len(runs)
    runs.clear()
    assert main([*argv, "--chunk-size", "1MB"]) == 0
    assert len(runs) == first + 1
