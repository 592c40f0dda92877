"""``topocast topology show|convert|generate`` and one-line errors (exit 2, no traceback)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from topocast.cli.main import main
from topocast.topology.io import load_file
from topocast.topology.simgrid import load_simgrid

_ROOT = Path(__file__).resolve().parents[1]
# ../shared/data beside the repository root (one level further up from a git worktree)
DATA = next(
    (d for d in (_ROOT / ".." / "shared" / "data", _ROOT / ".." / ".." / "shared" / "data") if d.is_dir()), None
)
FILES = (
    sorted((DATA / "simgrid").glob("*.xml"))
    + sorted((DATA / "simgrid").glob("*.conf"))
    + sorted((DATA / "topology-zoo").glob("*.graphml"))
    if DATA
    else []
)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_show_every_data_file(capsys, path):
    code, out, err = run(capsys, "topology", "show", path, "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["hosts"] > 0 and info["links"] > 0
    assert info["bandwidth"]["min"] > 0
    if path.suffix == ".graphml":
        assert "links_without_speed" in info
    code, out, err = run(capsys, "topology", "show", path)
    assert code == 0 and "hosts" in out


def test_show_counts_edges_without_speed(capsys):
    if DATA is None:
        pytest.skip("../shared/data is not present beside the repository")
    code, out, _ = run(capsys, "topology", "show", DATA / "topology-zoo" / "Geant2012.graphml", "--json")
    assert code == 0 and json.loads(out)["links_without_speed"] == 22
    code, out, _ = run(
        capsys,
        "topology",
        "show",
        DATA / "topology-zoo" / "Geant2012.graphml",
        "--default-bandwidth",
        "10Gbps",
        "--json",
    )
    assert code == 0 and "links_without_speed" not in json.loads(out)


def test_graphml_without_default_fails_in_other_commands(capsys, tmp_path):
    if DATA is None:
        pytest.skip("../shared/data is not present beside the repository")
    f = DATA / "topology-zoo" / "Cernet.graphml"
    code, out, err = run(capsys, "topology", "convert", f, tmp_path / "c.yaml")
    assert code == 2
    assert str(f) in err and "edges without LinkSpeedRaw" in err and "(6 of 59)" in err
    assert "Traceback" not in err
    code, out, err = run(capsys, "topology", "convert", f, tmp_path / "c.yaml", "--default-bandwidth", "1Gbps")
    assert code == 0, err
    assert len(load_file(tmp_path / "c.yaml").hosts) == 41


def test_show_builtin_list_and_builtin(capsys):
    code, out, _ = run(capsys, "topology", "show", "builtin:list", "--json")
    names = [r["name"] for r in json.loads(out)]
    assert code == 0 and "builtin:stable-example" in names and "builtin:two-clusters" in names
    code, out, _ = run(capsys, "topology", "show", "builtin:hetero-2switch", "--json")
    info = json.loads(out)
    assert (info["hosts"], info["switches"], info["links"], info["tree"]) == (8, 2, 9, True)
    assert info["bandwidth"]["min"] == 10 * 125_000 and info["bandwidth"]["max"] == 200 * 125_000


@pytest.mark.parametrize("ext", ["yaml", "json", "xml"])
def test_convert_builtin(capsys, tmp_path, ext):
    out_file = tmp_path / f"t.{ext}"
    code, out, err = run(capsys, "topology", "convert", "builtin:two-clusters", out_file)
    assert code == 0, err
    t = load_simgrid(out_file) if ext == "xml" else load_file(out_file)
    assert len(t.hosts) == 8 and len(t.physical_links) == 9


def test_convert_simgrid_to_yaml_keeps_routes(capsys, tmp_path):
    if DATA is None:
        pytest.skip("../shared/data is not present beside the repository")
    code, _, err = run(capsys, "topology", "convert", DATA / "simgrid" / "small_platform.xml", tmp_path / "s.yaml")
    assert code == 0, err
    assert len(load_file(tmp_path / "s.yaml").routes) == 42


@pytest.mark.parametrize(
    "argv",
    [
        ["multi-cluster", "--hosts", "50", "--clusters", "5", "--bandwidth", "uniform-100-1000", "--asymmetric"],
        ["two-cluster", "--hosts-per-cluster", "4", "--slow-hosts", "2"],
        ["fat-tree", "--k", "4", "--bandwidth", "uniform-100-1000"],
        ["random-tree", "--hosts", "12", "--switches", "4"],
    ],
)
def test_generate_is_deterministic(capsys, tmp_path, argv):
    a, b, c = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    assert run(capsys, "topology", "generate", *argv, "--seed", "5", "-o", a)[0] == 0
    assert run(capsys, "topology", "generate", *argv, "--seed", "5", "-o", b)[0] == 0
    assert run(capsys, "topology", "generate", *argv, "--seed", "6", "-o", c)[0] == 0
    assert a.read_text() == b.read_text()
    if argv[0] != "two-cluster" or "--slow-hosts" in argv:
        assert a.read_text() != c.read_text()
    load_file(a)


def test_generate_to_stdout(capsys):
    code, out, _ = run(capsys, "topology", "generate", "fat-tree", "--k", "2")
    assert code == 0 and out.startswith("name: fat-tree-k2")


# ------------------------------------------------------------------ errors through the CLI
ERRORS = {
    "malformed.yaml": ("hosts: [a, b\nlinks: []\n", ["malformed YAML at line 2, column"]),
    "malformed.json": ('{"hosts": ["a",\n ]}\n', ["malformed JSON at line 2"]),
    "unit.yaml": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 10 Gbits}\n",
        [":3: links[0] (a-b): bandwidth", "unknown bandwidth unit"],
    ),
    "zero.yaml": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 0Mbps}\n",
        ["links[0] (a-b): bandwidth", "must be positive"],
    ),
    "negative.yaml": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: -1Gbps}\n",
        ["links[0] (a-b): bandwidth", "must be positive"],
    ),
    "undeclared.yaml": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: zz, bandwidth: 1Gbps}\n",
        ["links[0] (a-zz): b", "'zz' is not a declared host or switch"],
    ),
    "duplicate.yaml": (
        "hosts: [a, b, a]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n",
        ["hosts[2] (a)", "duplicate name 'a'"],
    ),
    "unreachable.yaml": (
        "hosts: [a, b, c]\nswitches: [s]\nlinks:\n  - {a: a, b: s, bandwidth: 1Gbps}\n"
        "  - {a: b, b: s, bandwidth: 1Gbps}\n",
        ["host 'c'", "cannot be reached"],
    ),
    "duplink.yaml": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n  - {a: b, b: a, bandwidth: 1Gbps}\n",
        [":4: links[1] (b-a)", "duplicate link"],
    ),
    "topkey.yaml": ("hosts: [a]\nlinks: []\nroutez: []\n", ["top level", "unknown key 'routez'"]),
    "type.yaml": ("hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: [1]}\n", ["links[0] (a-b): bandwidth"]),
    "bad.xml": (
        '<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full">\n'
        '<host id="a" speed="1f"/><host id="b" speed="1f"/><link id="l" bandwidth="-5MBps"/>\n'
        '<route src="a" dst="b"><link_ctn id="l"/></route></zone></platform>\n',
        ['<link id="l">: bandwidth', "must be positive"],
    ),
}


@pytest.mark.parametrize("fname", sorted(ERRORS))
def test_errors_are_one_line_exit_2(capsys, tmp_path, fname):
    text, needles = ERRORS[fname]
    p = tmp_path / fname
    p.write_text(text)
    for argv in (["topology", "show", p], ["topology", "convert", p, tmp_path / "out.yaml"]):
        code, out, err = run(capsys, *argv)
        assert code == 2
        assert "Traceback" not in err + out
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("topocast: error: ")
        assert str(p) in err
        for n in needles:
            assert n in err, (n, err)


def test_error_through_subprocess(tmp_path):
    """The installed entry point path: no traceback, exit status 2."""
    p = tmp_path / "bad.yaml"
    p.write_text("hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 5 furlongs}\n")
    env_path = str(_ROOT / "src")
    r = subprocess.run(
        [sys.executable, "-m", "topocast", "topology", "show", str(p)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert str(p) in r.stderr and "links[0] (a-b): bandwidth" in r.stderr


def test_unknown_output_format(capsys, tmp_path):
    code, _, err = run(capsys, "topology", "convert", "builtin:two-clusters", tmp_path / "t.txt")
    assert code == 2 and "unknown output format" in err


def test_generate_bad_argument(capsys):
    code, _, err = run(capsys, "topology", "generate", "fat-tree", "--k", "3")
    assert code == 2 and "k must be an even number" in err


def test_convert_geo_latency(capsys, tmp_path):
    if DATA is None:
        pytest.skip("../shared/data is not present beside the repository")
    out_file = tmp_path / "g.yaml"
    code, _, err = run(
        capsys, "topology", "convert", DATA / "topology-zoo" / "Geant2009.graphml", out_file, "--geo-latency"
    )
    assert code == 0, err
    assert all(pl.latency > 0 for pl in load_file(out_file).physical_links)
    code, _, err = run(capsys, "topology", "convert", "builtin:two-clusters", out_file, "--geo-latency")
    assert code == 2 and "GraphML" in err


def test_convert_simgrid_routing_option(capsys, tmp_path):
    import xml.etree.ElementTree as ET

    out_file = tmp_path / "t.xml"
    code, _, err = run(capsys, "topology", "convert", "builtin:two-clusters", out_file, "--simgrid-routing", "Floyd")
    assert code == 0, err
    assert ET.parse(out_file).getroot().find("zone").get("routing") == "Floyd"
    code, _, err = run(capsys, "topology", "convert", "builtin:two-clusters", out_file)
    assert ET.parse(out_file).getroot().find("zone").get("routing") == "Full"


def test_convert_simgrid_exact(capsys, tmp_path):
    if DATA is None:
        pytest.skip("../shared/data is not present beside the repository")
    out_file = tmp_path / "g.yaml"
    code, _, err = run(capsys, "topology", "convert", DATA / "simgrid" / "griffon.xml", out_file, "--simgrid-exact")
    assert code == 0, err
    t = load_file(out_file)
    assert any(pl.directed for pl in t.physical_links) and not t.is_tree()
    code, _, err = run(capsys, "topology", "convert", "builtin:two-clusters", out_file, "--simgrid-exact")
    assert code == 2 and ".xml" in err
