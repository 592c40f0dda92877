"""docs/guide.md runs as written: its code blocks, taken from the markdown, run in order.

Every fenced block of the guide is one test case, in the guide's order, in one working
directory, so a block sees the files the blocks before it wrote. ``bash`` blocks run with
``bash -euo pipefail``, ``python`` blocks with this interpreter. An HTML comment right above a
block says how to treat it (invisible in the rendered guide):

* ``<!-- guide-test: file NAME -->``: the block is a file the reader saves as NAME;
* ``<!-- guide-test: after NAME -->``: the block uses NAME, which a later block defines (the
  guide explains this); it runs right after that block;
* ``<!-- guide-test: size SIZE -->``: every ``--size VALUE`` in the block becomes ``--size SIZE``,
  so that a run which moves tens of MiB for a reader stays quick here;
* ``<!-- guide-test: probe-duration SECONDS -->``: every ``topocast probe`` gets
  ``--probe-duration SECONDS``, a shorter longest round than a reader's default;
* ``<!-- guide-test: root -->``: needs root and iproute2 (the emulated network), skipped otherwise;
* ``<!-- guide-test: ssh -->``: runs against an sshd this test starts on loopback, with the
  substitutions of ``SSH_SUBSTITUTIONS`` (the reader's hosts, key, addresses and paths);
* ``<!-- guide-test: skip REASON -->``: not run, with that reason.

A block of another language without a mark fails the test: a new block must say how to test it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "guide.md"
BLOCK_TIMEOUT = 120

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*guide-test:\s*(?P<key>[\w-]+)\s*(?P<value>.*?)\s*-->\s*$")


@dataclass
class Block:
    line: int
    lang: str
    text: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.lang or 'text'}"


def guide_blocks(markdown: str) -> list[Block]:
    """The fenced blocks of ``markdown`` with the marks just above each, in running order."""
    lines = markdown.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent = i, len(m.group("indent"))
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        text = textwrap.dedent("\n".join(ln[indent:] if ln[:indent].isspace() else ln for ln in lines[start + 1 : j]))
        marks = {}
        k = start - 1
        while k >= 0 and (mk := _MARK.match(lines[k])):
            marks[mk.group("key")] = mk.group("value")
            k -= 1
        blocks.append(Block(start + 1, m.group("lang"), text + "\n", marks))
        i = j + 1
    return _deferred_after_their_files(blocks)


def _deferred_after_their_files(blocks: list[Block]) -> list[Block]:
    """Move each block marked ``after NAME`` to just after the block marked ``file NAME``."""
    ordered = [b for b in blocks if "after" not in b.marks]
    for b in (b for b in blocks if "after" in b.marks):
        writers = [i for i, w in enumerate(ordered) if w.marks.get("file") == b.marks["after"]]
        assert writers, f"guide.md line {b.line}: no block is marked 'file {b.marks['after']}'"
        ordered.insert(writers[0] + 1, b)
    return ordered


BLOCKS = guide_blocks(GUIDE.read_text())


def _no_testbed_reason() -> str | None:
    if os.geteuid() != 0:
        return "the emulated network needs root (network namespaces and tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) is not installed"
    return None


class Workspace:
    """The reader's shell: one directory, `topocast` on PATH, a private testbed state dir."""

    def __init__(self, root: Path):
        self.root = root
        self.dir = root / "work"
        self.dir.mkdir()
        bin_dir = root / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "topocast"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m topocast "$@"\n')
        shim.chmod(0o755)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), self.env.get("PYTHONPATH")]))
        self.env["TOPOCAST_STATE_DIR"] = str(root / "testbed-state")
        self.env["MPLBACKEND"] = "Agg"
        self.sshd: dict | None = None
        self.ssh_skip: str | None = None

    def run(self, argv: list[str], stdin: str | None = None) -> None:
        proc = subprocess.run(
            argv, cwd=self.dir, env=self.env, input=stdin, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
        )
        assert proc.returncode == 0, (
            f"exit status {proc.returncode}\n--- stdout (end) ---\n{proc.stdout[-3000:]}\n"
            f"--- stderr (end) ---\n{proc.stderr[-3000:]}"
        )

    def tear_down_testbeds(self) -> None:
        state_dir = Path(self.env["TOPOCAST_STATE_DIR"])
        if not state_dir.is_dir():
            return
        for state in state_dir.glob("*.json"):
            subprocess.run(
                [sys.executable, "-m", "topocast", "testbed", "down", state.stem],
                env=self.env,
                capture_output=True,
                timeout=60,
            )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from runtime.sshd import SshdUnavailable, loopback_sshd

    ws = Workspace(tmp_path_factory.mktemp("guide"))
    sshd_dir = ws.root / "sshd"
    sshd_dir.mkdir()
    try:
        with loopback_sshd(sshd_dir) as info:
            ws.sshd = info
            yield ws
    except SshdUnavailable as why:
        ws.ssh_skip = str(why)
        yield ws
    finally:
        ws.tear_down_testbeds()


def ssh_substitutions(ws: Workspace) -> list[tuple[str, str]]:
    """What the reader's ssh commands become on the loopback sshd: pattern -> replacement."""
    key = ws.sshd["key"]
    options = " ".join(
        f"--ssh-option=-o{o}" for o in ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "LogLevel=ERROR")
    )
    return [
        (r"--ssh-identity\s+\S+", ""),
        (r"--launcher ssh", f"--launcher ssh --ssh-identity {key} {options}"),
        (r"--control-host\s+\S+", "--control-host 127.0.0.1"),
        (r"/data/image\.bin", str(ws.dir / "image.bin")),
        (r"/scratch/topocast", str(ws.dir / "scratch")),
    ]


def _ssh_setup(ws: Workspace, user: str, port: int) -> str:
    """Shell lines that give the reader's files to the ssh blocks: hosts file, message, folder."""
    return (
        f"{sys.executable} - <<'EOF'\n"
        "import yaml\n"
        "from topocast import load_topology\n"
        "hosts = load_topology('my-net.yaml').hosts\n"
        f"entry = {{'target': '{user}@127.0.0.1', 'port': {port}, 'address': '127.0.0.1'}}\n"
        "yaml.safe_dump({h: entry for h in hosts}, open('hosts.yaml', 'w'))\n"
        "EOF\n"
        "head -c 3000000 /dev/urandom > image.bin\n"
        "mkdir -p scratch\n"
    )


def _prepared(block: Block, ws: Workspace) -> str:
    text = block.text
    if "size" in block.marks:
        text = re.sub(r"--size\s+\S+", f"--size {block.marks['size']}", text)
    if "probe-duration" in block.marks:
        text = re.sub(r"topocast probe\b", f"topocast probe --probe-duration {block.marks['probe-duration']}", text)
    if "ssh" in block.marks:
        for pattern, replacement in ssh_substitutions(ws):
            text = re.sub(pattern, lambda _m, r=replacement: r, text)
        text = _ssh_setup(ws, ws.sshd["user"], ws.sshd["port"]) + text
    return text


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_guide_block_runs_as_written(block: Block, workspace: Workspace):
    if "skip" in block.marks:
        pytest.skip(f"guide.md line {block.line}: {block.marks['skip']}")
    if "root" in block.marks and (why := _no_testbed_reason()):
        pytest.skip(f"guide.md line {block.line}: {why}")
    if "ssh" in block.marks and workspace.sshd is None:
        pytest.skip(f"guide.md line {block.line}: {workspace.ssh_skip}")
    if "file" in block.marks:
        (workspace.dir / block.marks["file"]).write_text(block.text)
        return
    text = _prepared(block, workspace)
    if block.lang in ("bash", "sh", "shell"):
        workspace.run(["bash", "-euo", "pipefail", "-c", text])
    elif block.lang == "python":
        workspace.run([sys.executable, "-"], stdin=text)
    else:
        pytest.fail(
            f"guide.md line {block.line}: a ```{block.lang} block without a guide-test mark "
            "(file NAME, or skip REASON): say how it is tested"
        )


def test_the_guide_has_blocks_of_every_kind_it_is_tested_with():
    """The extraction itself: a change to the markdown's layout must not silently test nothing."""
    kinds = {b.lang for b in BLOCKS}
    assert {"bash", "python", "yaml"} <= kinds, kinds
    assert any("file" in b.marks for b in BLOCKS)
    assert sum(b.lang == "bash" for b in BLOCKS) >= 5
