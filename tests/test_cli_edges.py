"""The command line's edges: outputs checked before any work, one spelling per option, sizes
echoed as written, unknown hosts listed, unchecked plans refused, stalled runs caught."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from topocast.cli.main import build_parser, main
from topocast.evaluate.sweep import sizes_between
from topocast.units import format_size, parse_bandwidth


def _run_cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    "argv, option",
    [
        (["plan", "builtin:two-clusters", "-a", "stable", "-o", "{missing}/plan.json"], "--output"),
        (["plan", "builtin:two-clusters", "-a", "stable", "-o", "{tmp}/plan.txt"], "--output"),
        (["compare", "builtin:two-clusters", "--plot", "{missing}/c.png"], "--plot"),
        (["compare", "builtin:two-clusters", "--plot", "{tmp}/c.nope"], "--plot"),
        (["sweep", "builtin:two-clusters", "-a", "flat", "--plot", "{missing}/s.png"], "--plot"),
        (["redistribute", "plan", "--pattern", "random", "-o", "{missing}/r.json"], "--output"),
        (["redistribute", "plan", "--pattern", "random", "--plot", "{tmp}/g.nope"], "--plot"),
        (["experiment", "stable-broadcast", "--out", "{file}/sub"], "--out"),
    ],
)
def test_bad_outputs_are_refused_before_the_work(tmp_path, capsys, argv, option):
    (tmp_path / "a-file").write_text("x")
    fill = {"missing": str(tmp_path / "no-such-folder"), "tmp": str(tmp_path), "file": str(tmp_path / "a-file")}
    argv = [a.format(**fill) for a in argv]
    t0 = time.monotonic()
    code, text = _run_cli(capsys, *argv)
    assert code == 2
    assert option in text and "Traceback" not in text
    assert time.monotonic() - t0 < 5  # nothing was planned or simulated first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_experiment_makes_its_output_folder(tmp_path):
    from topocast.cli.common import check_output

    check_output(tmp_path / "a" / "b", "--out", folder=True)
    assert (tmp_path / "a" / "b").is_dir()


def _options(parser, path=()):
    """(command path, option strings) of every subcommand action."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, path + (name,))
        elif action.option_strings:
            yield path, tuple(action.option_strings)


def test_one_spelling_per_option_short_and_long():
    """--source is -s, --algorithm(s) is -a, --output is -o on every command that has it."""
    short = {"--source": "-s", "--algorithm": "-a", "--algorithms": "-a", "--output": "-o"}
    seen = 0
    for path, opts in _options(build_parser()):
        for long, s in short.items():
            if long in opts:
                assert s in opts, (path, opts)
                seen += 1
    assert seen >= 12


def test_readme_sweep_spelling_works(capsys):
    code, text = _run_cli(capsys, "sweep", "builtin:two-clusters", "-a", "flat,binomial", "--json")
    assert code == 0 and json.loads(text)["sizes"]


def test_sizes_are_echoed_as_written():
    assert format_size(10**9) == "1 GB"
    assert format_size(2**30) == "1 GiB"
    assert format_size(64 * 2**20) == "64 MiB"
    assert format_size(1500) == "1.5 kB"


def test_bad_bandwidth_lists_the_accepted_forms():
    from topocast.errors import InputError

    with pytest.raises(InputError, match="1Gbps.*125MB/s.*bytes/s"):
        parse_bandwidth("fast", field="bandwidth")


def test_run_unknown_source_lists_the_hosts(capsys):
    code, text = _run_cli(
        capsys, "run", "builtin:two-clusters", "-a", "stable", "-s", "nosuch", "--size", "1MB", "--launcher", "local"
    )
    assert code == 2 and "hosts: s, a1" in text


def test_run_plan_without_topology_names_an_unknown_host_before_starting(tmp_path, capsys):
    code, _ = _run_cli(
        capsys, "plan", "builtin:two-clusters", "-a", "depth_first", "--size", "1MB", "-o", str(tmp_path / "p.json")
    )
    assert code == 0
    data = json.loads((tmp_path / "p.json").read_text())
    data["transfers"][2]["dst"] = "ghost"
    (tmp_path / "ghost.json").write_text(json.dumps(data))
    t0 = time.monotonic()
    code, text = _run_cli(capsys, "run", str(tmp_path / "ghost.json"), "--launcher", "local")
    assert code == 2 and "'ghost'" in text and "transfers[2]" in text
    assert time.monotonic() - t0 < 5


def test_a_stalled_run_fails_from_missing_progress_not_message_size():
    """The source's agent is frozen as the run starts: nothing moves, and the run ends after
    the idle timeout with the bytes each host holds, not after a size-based timeout."""
    from topocast.plan import Plan, Transfer
    from topocast.runtime import make_launcher, perform

    size = 50_000_000
    plan = Plan.broadcast("s", size, ["a"], [Transfer.of("s", "a", 0, size, rate_cap=1e6)], planner="one")
    frozen = []

    def freeze(procs):
        os.kill(procs["s"].pid, signal.SIGSTOP)
        frozen.append(procs["s"])

    t0 = time.monotonic()
    try:
        out = perform(plan, launcher=make_launcher("local"), on_start=freeze, idle_timeout=2.0, stall_timeout=30)
    finally:
        for p in frozen:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    assert frozen and time.monotonic() - t0 < 30
    assert "no byte moved anywhere for 2 s" in out.failed["a"]
    assert "of 50000000 bytes" in out.failed["a"]


def test_names_are_never_cut_at_80_columns():
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run(
        [sys.executable, "-m", "topocast", "topology", "show", "builtin:list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0
    from topocast.topology.builtin import builtin_names

    for name in builtin_names():
        assert f"builtin:{name}" in r.stdout, name
    assert "…" not in r.stdout  # nor is a word of a summary
    r = subprocess.run(
        [sys.executable, "-m", "topocast", "compare", "builtin:two-clusters", "--size", "1MB"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0
    from topocast.planners.registry import available_planners

    for info in available_planners("broadcast", include_selectors=False):
        assert info.name in r.stdout, info.name


def test_every_generator_option_has_help_text():
    import argparse

    parser = build_parser()
    topology = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["topology"]
    generate = next(a for a in topology._actions if isinstance(a, argparse._SubParsersAction)).choices["generate"]
    kinds = next(a for a in generate._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {"multi-cluster", "two-cluster", "fat-tree", "random-tree"} <= set(kinds)
    for kind, sub in kinds.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, (kind, action.option_strings)


def test_progress_shows_on_a_terminal_only(monkeypatch, capsys):
    """compare and sweep draw a progress bar on stderr when it is a terminal, never with
    --json or when piped (stdout stays clean JSON either way)."""
    import io

    from topocast.cli import common

    class Tty(io.StringIO):
        def isatty(self):
            return True

    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    seen = []
    with common.progress(3, "work") as step:
        for k in range(3):
            step(f"step {k}")
            seen.append(k)
    assert seen == [0, 1, 2]
    assert "step 2" in fake.getvalue()  # the bar was drawn on the (fake) terminal
    quiet = Tty()
    monkeypatch.setattr(sys, "stderr", quiet)
    with common.progress(3, "work", quiet=True) as step:
        step("x")
    assert quiet.getvalue() == ""
    monkeypatch.undo()
    code, text = _run_cli(capsys, "compare", "builtin:two-clusters", "--size", "1MB", "-a", "flat,stable", "--json")
    assert code == 0 and json.loads(text)["results"]


def test_compare_says_which_bound_a_fraction_refers_to(tmp_path, capsys):
    topo = tmp_path / "half.yaml"
    topo.write_text(
        "name: half\nhosts: [s, a, b, c]\nswitches: [sw]\nlinks:\n"
        + "".join(f"  - {{a: {h}, b: sw, bandwidth: 1Gbps, sharing: shared}}\n" for h in "sabc")
    )
    code, text = _run_cli(capsys, "compare", str(topo), "--size", "100MB", "-a", "stable,flat", "--json")
    data = json.loads(text)
    assert code == 0 and data["bound"]["kind"] == "sum of per-destination max-flows"
    assert data["ceiling"]["aggregate_bandwidth"] == pytest.approx(4 * 125e6 / 2)
    stable = next(r for r in data["results"] if r["algorithm"] == "stable")
    assert stable["of_ceiling"] > stable["of_bound"]
    code, text = _run_cli(capsys, "compare", str(topo), "--size", "100MB", "-a", "stable,flat")
    # the routes are fixed (a tree): the fractions are of the route-aware bound, which is below
    # Σ max-flow here, and of its steady form (never above the relay ceiling, so that one is
    # not repeated)
    assert "route bound (aggregate)" in text and "route bound (steady rates)" in text and "Σ max-flow" in text
    assert stable["of_reference"] > stable["of_bound"]
    assert data["reference"]["kind"].startswith("route-aware")
    assert data["route_bound"]["steady_aggregate_bandwidth"] == pytest.approx(data["ceiling"]["aggregate_bandwidth"])


SWEEP_PLANNERS = "stable,scatter_allgather_rdb,scatter_allgather_ring,depth_first,balanced_multicast,two_tree,binomial"


def test_sweep_table_keeps_every_name_and_figure_at_80_columns(monkeypatch, capsys):
    """Many planners and sizes: rows are planners (whole names), the sizes spread over as many
    tables as it takes; nothing is cut and no line is wider than the terminal."""
    monkeypatch.setenv("COLUMNS", "80")
    code, text = _run_cli(capsys, "sweep", "builtin:two-clusters", "-a", SWEEP_PLANNERS, "--max", "16MB")
    assert code == 0
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    assert "…" not in text
    for name in SWEEP_PLANNERS.split(","):
        assert any(line.startswith(f"│ {name} ") for line in lines), name
    for size in sizes_between(1024, 16 * 10**6, 4.0):
        assert f" {format_size(size, binary=True)} ┃" in text, size
    # every planner's row holds one figure per size, over all the tables
    figures = sum(len(line.split("│")) - 3 for line in lines if line.startswith("│ stable "))
    assert figures == len(sizes_between(1024, 16 * 10**6, 4.0))


def test_run_table_fits_80_columns_with_a_failed_host():
    """The run table (measured, predicted, bound, status) is at most 80 columns wide: no column
    is cropped at the right, and a long failure reason folds inside the status column."""
    import io

    from rich.console import Console

    from topocast import Broadcast, broadcast_bounds, get_planner, load_topology, simulate
    from topocast.cli.cmd_run import print_table
    from topocast.results import HostResult, Result
    from topocast.runtime import RunOutcome

    topo = load_topology("builtin:two-clusters")
    plan = get_planner("broadcast", "stable")(topo, Broadcast("s", 16 * 10**6))
    predicted = simulate(plan, topo)
    reason = "timed out: no byte moved anywhere for 30 s, holding 7549748 of 16000000 bytes"
    per_host = dict(predicted.per_host)
    per_host["b3"] = HostResult(float("inf"), 0.0, completed=False, reason=reason)
    measured = Result("stable", per_host, float("inf"), predicted.aggregate_bandwidth, kind="measured")
    outcome = RunOutcome(measured, failed={"b3": reason})
    out = io.StringIO()
    print_table(Console(file=out, width=80), plan, "stable", measured, predicted, broadcast_bounds(topo, "s"), outcome)
    lines = out.getvalue().splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert len(table) >= len(plan.wanted) + 5
    assert max(len(line) for line in lines) <= 80
    assert all(line.rstrip()[-1] in "┓┃┩│┘" for line in table), "a column was cropped"
    below = " ".join(line.strip() for line in lines[len(table) :])
    assert f"b3: {reason}" in below  # the whole reason, under the table


def test_compare_plot_stays_readable_with_every_planner(tmp_path, monkeypatch):
    """Every registered planner gets its own labelled bar, best first; the per-host panel shows
    only the best few, each in its own colour, with its legend inside that panel."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from topocast import load_topology
    from topocast.evaluate.compare import PLOT_BEST, compare, plot_compare

    saved = []
    real_savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        saved.append(fig)
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    topo = load_topology("builtin:two-clusters")
    bound, results = compare(topo, "s", 10**6)
    ok = [(n, r) for n, r in results if not isinstance(r, str)]
    assert len(ok) > 10
    plot_compare(tmp_path / "c.png", topo, "s", bound, ok)
    assert (tmp_path / "c.png").stat().st_size > 10_000
    (fig,) = saved
    bars, hosts = fig.axes[:2]
    labels = [t.get_text() for t in bars.get_yticklabels()]
    assert labels == [n for n, r in sorted(ok, key=lambda nr: -nr[1].aggregate_bandwidth)]
    lines = [line for line in hosts.get_lines() if line.get_label() in labels]
    assert len(lines) == min(PLOT_BEST, len(ok))
    assert len({matplotlib.colors.to_hex(line.get_color()) for line in lines}) == len(lines)
    fig.canvas.draw()
    inside = hosts.get_window_extent()
    legend = hosts.get_legend().get_window_extent()
    assert inside.x0 <= legend.x0 and legend.x1 <= inside.x1, "the legend lies outside its panel"


def test_the_command_runs_its_exit_handlers_and_flushes_its_output(tmp_path):
    """The console script ends without the interpreter's teardown: what it printed must still
    arrive whole, and its exit handlers (the local launcher's temporary folder) still run."""
    topocast = [sys.executable, "-c", "from topocast.cli.main import console_script; console_script()"]
    r = subprocess.run(
        [*topocast, "run", "builtin:two-clusters", "-a", "stable", "-s", "s"]
        + ["--size", "1MiB", "--launcher", "local", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["failed"] == {}
    assert not list(tmp_path.glob("topocast-agents-*"))
    r = subprocess.run(
        [*topocast, "run", "builtin:two-clusters", "-a", "stable", "-s", "nosuch"] + ["--size", "1MiB"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "nosuch" in r.stderr
