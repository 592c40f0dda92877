"""Chaos benchmark: ``topocast run`` under faults injected at random moments.

Every run broadcasts a random file with ``--dest-dir`` on ``builtin:two-clusters`` (plan
``stable``: chains of relays) through the local launcher, and, as root with iproute2, also on
an emulated network of the same topology (``--launcher testbed``). One fault per run, drawn
among:

* ``kill-relay`` / ``kill-leaf`` / ``kill-source``: SIGKILL to that host's agent;
* ``stop-relay`` / ``stop-leaf`` / ``stop-source``: SIGSTOP to it (never continued);
* ``term-coordinator``: SIGTERM to ``topocast run`` itself;
* ``disk-full``: the destination folder is a tmpfs (mounted here, as root) with room for
  about half of the copies;
* ``truncate-source``: the message file cut short while it is sent (once the source's agent
  has it open);
* ``ssh-unreachable``: ``--launcher ssh`` through a loopback sshd started here, one host's
  ssh port closed;
* ``none``: a control run.

A fault aimed at an agent waits until the agent has opened its store (its files under the
destination folder; the source: the message file), then a uniform delay of 0-0.8 s; so does the
truncation (on the source); the coordinator's SIGTERM comes 0-2.5 s after the launch (the
start-up included). For each run it records the exit status, the JSON's per-host outcome,
the sha256 of every copy, and checks:

* **wrong success**: a host reported complete whose copy is missing or differs, or exit 0
  with any destination missing or wrong;
* **hang**: the run still going ``--hang-after`` seconds after its launch (then killed);
* **report latency**: exit time minus the moment the failure was knowable: the later of the
  fault (a full disk: the first ``.part`` allocated; an unreachable host: the first ``ssh``
  started; a truncation: the cut; a stopped agent: the stop plus topocast's silence threshold
  ``SILENT_AFTER``, since alive and silent it is known stopped once it has sent no heartbeat
  for that long, design.md) and the last completion (a copy renamed from ``.part``, watched
  every 20 ms); failures reported later than 5 s after that are counted;
* **unexplained**: a non-zero exit whose failed hosts have no reason and whose stderr has no
  message (except a SIGTERM sent before the run had a handler for it, i.e. while the
  interpreter itself still started: counted apart), or any Python traceback on stderr;
* **leftovers**: processes still there 5 s after the run's exit (this script is the child
  subreaper, so every process a run leaves behind becomes its child), entries in the run's private ``TMPDIR``, new
  ``/dev/shm`` entries, namespaces beyond the testbed's, and files in the destination folder
  that design.md's rule ("Files a run leaves") does not keep on purpose: ``HOST/NAME.part``
  stays only for a host that did not complete and was not refused for want of disk space.
  Processes of an ssh run that ran under the sshd (the remote hosts' side) are counted
  apart: on a real network they are left on the remote machines, not on this one.

Seeds are drawn at run time and printed (``--seed`` replays the draws; fault moments still
depend on timing). ``--runs N``, ``--json FILE`` for every run's record. Needs no lock: it
measures no speed, only correctness, timeliness and cleanliness::

    python benchmarks/bench_chaos.py --runs 200 [--seed S] [--json chaos.json]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = "builtin:two-clusters"
ALGORITHM = "stable"
SOURCE = "s"
IDLE_TIMEOUT = 5.0
SILENT_AFTER = 5.0  # topocast's threshold for a silent (stopped, hung) agent: runtime.coordinator.SILENT_AFTER
REPORT_TARGET = 5.0
LEFTOVER_PATIENCE = 5.0  # seconds after the run's exit that its processes have to be gone
AGENT_DELAY = 0.8  # seconds, at most, between an agent's store opening and its fault
PR_SET_CHILD_SUBREAPER = 36

AGENT_FAULTS = [f"{sig}-{role}" for sig in ("kill", "stop") for role in ("relay", "leaf", "source")]
FAULTS = ["none", *AGENT_FAULTS, "term-coordinator", "disk-full", "truncate-source", "ssh-unreachable"]


@dataclass
class RunRecord:
    index: int
    seed: int
    launcher: str
    fault: str
    target: str = ""
    fault_at: float | None = None  # seconds after the launch; None: the fault never happened
    exit_code: int | None = None
    duration: float = 0.0
    hang: bool = False
    completed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    copies_ok: list[str] = field(default_factory=list)
    copies_bad: list[str] = field(default_factory=list)
    wrong_success: list[str] = field(default_factory=list)
    report_latency: float | None = None
    done_at: dict[str, float] = field(default_factory=dict)  # host -> seconds after launch its copy appeared
    unexplained: str = ""
    leftovers: list[str] = field(default_factory=list)
    part_files: list[str] = field(default_factory=list)
    remote_leftovers: list[str] = field(default_factory=list)  # ssh hosts' processes (under our sshd)
    before_handler: bool = False  # the SIGTERM came while the interpreter still started (no handler yet)
    stderr_tail: str = ""


# ----------------------------------------------------------------------------- processes
def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(rest[1]), rest[0])
    return table


def _descendants(root: int, table: dict[int, tuple[int, str]]) -> set[int]:
    children = defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    out, todo = set(), [root]
    while todo:
        for c in children[todo.pop()]:
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _open_files(pid: int) -> set[str]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    out = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def find_agent(run_pid: int, host: str, dest: Path, message: Path) -> int | None:
    """The pid of ``host``'s agent among the run's descendants: a receiver holds files under
    ``dest/host``; the source (which receives nothing) holds the message file. The coordinator
    and the fork server (which has agent children) are never the answer."""
    table = _proc_table()
    family = _descendants(run_pid, table)
    parents = {table[p][0] for p in family if p in table}
    for pid in sorted(family):
        if pid in parents:
            continue
        files = _open_files(pid)
        if host == SOURCE:
            if str(message) in files and not any(f.startswith(f"{dest}/") for f in files):
                return pid
        elif any(f.startswith(f"{dest}/{host}/") for f in files):
            return pid
    return None


def _wait_for_orphans(keep: set[int], patience: float) -> None:
    """Reap the run's orphans that exit by themselves within ``patience`` seconds (an agent
    whose ssh went away notices its closed stdin and exits)."""
    end = time.monotonic() + patience
    while time.monotonic() < end:
        alive = False
        for pid, (ppid, state) in _proc_table().items():
            if ppid != os.getpid() or pid in keep:
                continue
            if state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            else:
                alive = True
        if not alive:
            return
        time.sleep(0.1)


def reap_leftover_children(keep: set[int]) -> list[str]:
    """Processes left behind by a run: (as subreaper) our children other than ``keep``.
    Each is named, killed by its pid and reaped."""
    found = []
    for pid, (ppid, state) in _proc_table().items():
        if ppid != os.getpid() or pid in keep:
            continue
        if state != "Z":
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = "?"
            found.append(f"process {pid} ({state}): {cmd.strip()[:120]}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return found


# ----------------------------------------------------------------------------- set-up
@dataclass
class Bench:
    work: Path
    message: Path
    digest: str
    plan: Path
    receivers: list[str]
    relays: list[str]
    leaves: list[str]
    env: dict
    testbed: str | None = None
    testbed_prefix: str | None = None
    sshd: dict | None = None
    can_mount: bool = False
    keep_pids: set[int] = field(default_factory=set)


def _topocast(env, *args, **kw):
    return subprocess.run([sys.executable, "-m", "topocast", *args], env=env, capture_output=True, text=True, **kw)


def prepare(work: Path, size: int, rng: random.Random) -> Bench:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["TOPOCAST_STATE_DIR"] = str(work / "testbed-state")
    message = work / "message.bin"
    message.write_bytes(rng.randbytes(size))
    plan = work / "plan.json"
    r = _topocast(env, "plan", TOPOLOGY, "-a", ALGORITHM, "-s", SOURCE, "--size", str(size), "-o", str(plan))
    if r.returncode:
        raise SystemExit(f"planning failed: {r.stderr}")
    transfers = json.loads(plan.read_text())["transfers"]
    senders = {t["src"] for t in transfers}
    receivers = sorted({t["dst"] for t in transfers})
    relays = sorted(senders - {SOURCE})
    leaves = sorted(set(receivers) - senders)
    digest = hashlib.sha256(message.read_bytes()).hexdigest()
    return Bench(work, message, digest, plan, receivers, relays, leaves, env)


def testbed_reason() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if not (shutil.which("ip") and shutil.which("tc")):
        return "iproute2 missing"
    return None


def namespaces() -> set[str]:
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


# ----------------------------------------------------------------------------- one run
def _command(bench: Bench, launcher: str, message: Path, dest: Path, rng: random.Random) -> tuple[list[str], str]:
    """The ``topocast run`` command of one run, and the host made unreachable (ssh only)."""
    cmd = [sys.executable, "-m", "topocast", "run", str(bench.plan), "--topology", TOPOLOGY]
    cmd += ["--file", str(message), "--dest-dir", str(dest), "--json", "--idle-timeout", str(IDLE_TIMEOUT)]
    cmd += ["--launcher", launcher]
    unreachable = ""
    if launcher == "testbed":
        cmd += ["--testbed", bench.testbed]
    elif launcher == "ssh":
        info = bench.sshd
        unreachable = rng.choice([SOURCE, *bench.receivers])
        closed = _closed_port()
        hosts = {
            h: {
                "target": f"{info['user']}@127.0.0.1",
                "port": closed if h == unreachable else info["port"],
                "address": "127.0.0.1",
            }
            for h in [SOURCE, *bench.receivers]
        }
        hosts_file = dest.parent / "hosts.json"
        hosts_file.write_text(json.dumps(hosts))
        cmd += ["--ssh-hosts", str(hosts_file), "--ssh-identity", info["key"], "--control-host", "127.0.0.1"]
        cmd += [
            f"--ssh-option=-o{o}"
            for o in ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "LogLevel=ERROR", "ConnectTimeout=5")
        ]
    return cmd, unreachable


def _closed_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there any more: connections are refused at once
    return port


class _Fault:
    """Fires one fault at its moment: an agent's signal once the agent is found and its delay
    passed, the coordinator's SIGTERM or the truncation at a delay after the launch."""

    def __init__(self, kind: str, target: str, rng: random.Random, size: int):
        self.kind, self.target, self.rng, self.size = kind, target, rng, size
        self.pid: int | None = None
        self.fire_at: float | None = None
        self.fired_at: float | None = None
        self.handled: bool | None = None  # term-coordinator: had the run a SIGTERM handler then?
        if kind == "term-coordinator":
            self.fire_at = rng.uniform(0.0, 2.5)
        self.started = kind in ("disk-full", "ssh-unreachable")  # fires when the run gets there

    def step(self, now: float, proc: subprocess.Popen, bench: Bench, dest: Path, message: Path) -> None:
        if self.fired_at is not None or self.kind == "none":
            return
        if self.started:  # knowable once the agents start (ssh runs) or allocate (a .part file)
            if self.kind == "ssh-unreachable":
                table = _proc_table()
                hit = any(_comm(p) == "ssh" for p in _descendants(proc.pid, table))
            else:
                hit = any(dest.glob("*/*.part"))
            if hit:
                self.fired_at = now
            return
        if (self.kind in AGENT_FAULTS or self.kind == "truncate-source") and self.pid is None:
            self.pid = find_agent(proc.pid, self.target, dest, message)
            if self.pid is not None:
                self.fire_at = now + self.rng.uniform(0.0, AGENT_DELAY)
            return
        if self.fire_at is None or now < self.fire_at:
            return
        if self.kind == "term-coordinator":
            self.handled = _catches(proc.pid, signal.SIGTERM)
            proc.send_signal(signal.SIGTERM)
        elif self.kind == "truncate-source":
            os.truncate(message, self.rng.randrange(self.size))
        else:
            try:
                os.kill(self.pid, signal.SIGKILL if self.kind.startswith("kill") else signal.SIGSTOP)
            except ProcessLookupError:
                return  # the agent had already finished: no fault
        self.fired_at = now


def _catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` now (``SigCgt`` in its status)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def _target(kind: str, bench: Bench, rng: random.Random) -> str:
    if kind.endswith("-relay"):
        return rng.choice(bench.relays)
    if kind.endswith("-leaf"):
        return rng.choice(bench.leaves)
    if kind.endswith("-source"):
        return SOURCE
    return ""


def one_run(bench: Bench, index: int, seed: int, launcher: str, kind: str, hang_after: float) -> RunRecord:
    rng = random.Random(seed)
    rec = RunRecord(index, seed, launcher, kind, target=_target(kind, bench, rng))
    run_dir = bench.work / f"run{index}"
    tmp, dest = run_dir / "tmp", run_dir / "dest"
    for d in (tmp, dest):
        d.mkdir(parents=True)
    size = bench.message.stat().st_size
    message = bench.message
    if kind == "truncate-source":
        message = run_dir / "message.bin"
        shutil.copyfile(bench.message, message)
    mounted = kind == "disk-full"
    if mounted:  # room for about half of the copies (tmpfs counts whole pages)
        room = (len(bench.receivers) // 2) * size + size // 3
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={room}", "tmpfs", str(dest)], check=True)
    cmd, unreachable = _command(bench, launcher, message, dest, rng)
    rec.target = rec.target or unreachable
    shm_before = set(os.listdir("/dev/shm"))
    ns_before = namespaces() if testbed_reason() is None else set()
    env = dict(bench.env, TMPDIR=str(tmp))
    fault = _Fault(kind, rec.target, rng, size)
    done_at: dict[str, float] = {}
    remote: set[int] = set()  # the "remote hosts'" side of ssh runs: under our sshd
    next_look = 0.0
    with open(run_dir / "stdout", "wb") as out, open(run_dir / "stderr", "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=run_dir)
        while proc.poll() is None:
            now = time.monotonic() - t0
            if now > hang_after:
                rec.hang = True
                _kill_family(proc)
                break
            fault.step(now, proc, bench, dest, message)
            if launcher == "ssh" and now >= next_look:
                remote |= _descendants(bench.sshd["pid"], _proc_table())
                next_look = now + 0.2
            for h in bench.receivers:
                if h not in done_at and (dest / h / message.name).exists():
                    done_at[h] = now
            time.sleep(0.02)
        proc.wait()
        rec.duration = time.monotonic() - t0
    rec.exit_code = proc.returncode
    rec.fault_at = fault.fired_at
    rec.before_handler = fault.handled is False
    rec.done_at = {h: round(t, 3) for h, t in done_at.items()}
    time.sleep(0.5)  # the run's own clean-up after its exit is not a leftover
    _judge(rec, bench, run_dir, dest, message, done_at)
    for left in _leftovers(bench, tmp, shm_before, ns_before, remote):
        pid = int(left.split()[1]) if left.startswith("process ") else None
        (rec.remote_leftovers if pid in remote else rec.leftovers).append(left)
    rec.part_files, stray = _files_left(rec, dest, message.name)
    rec.leftovers += stray
    if mounted:
        subprocess.run(["umount", str(dest)], check=False)
    shutil.rmtree(run_dir, ignore_errors=True)
    return rec


def _kill_family(proc: subprocess.Popen) -> None:
    """A hung run: SIGKILL it and every process it started, by pid."""
    family = _descendants(proc.pid, _proc_table()) | {proc.pid}
    for pid in family:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _judge(rec: RunRecord, bench: Bench, run_dir: Path, dest: Path, message: Path, done_at: dict) -> None:
    """Copies against the message, the run's JSON against the copies, and the report's delay."""
    stderr = (run_dir / "stderr").read_text(errors="replace")
    rec.stderr_tail = stderr[-400:]
    try:
        report = json.loads((run_dir / "stdout").read_text())
    except (OSError, ValueError):
        report = {}
    per_host = (report.get("measured") or {}).get("per_host") or {}
    rec.failed = {h: str(why) for h, why in (report.get("failed") or {}).items()}
    rec.completed = sorted(h for h, r in per_host.items() if r.get("completed", True) and h not in rec.failed)
    for h in bench.receivers:
        copy = dest / h / message.name
        ok = copy.is_file() and hashlib.sha256(copy.read_bytes()).hexdigest() == bench.digest
        (rec.copies_ok if ok else rec.copies_bad).append(h)
        if h in rec.completed and not ok:
            rec.wrong_success.append(f"{h} reported complete, copy {'wrong' if copy.is_file() else 'missing'}")
    if rec.exit_code == 0 and rec.copies_bad:
        rec.wrong_success.append(f"exit 0 without a correct copy on {', '.join(rec.copies_bad)}")
    if "Traceback" in stderr:
        rec.unexplained = "traceback on stderr"
    elif rec.exit_code not in (0, None) and not rec.hang:
        if not any(rec.failed.values()) and not stderr.strip() and not rec.before_handler:
            rec.unexplained = "non-zero exit with no cause given"
        if rec.fault_at is not None or rec.fault in ("none", "disk-full", "ssh-unreachable"):
            fault_known = (rec.fault_at or 0.0) + (SILENT_AFTER if rec.fault.startswith("stop") else 0.0)
            knowable = max([fault_known, *done_at.values()])
            rec.report_latency = rec.duration - knowable


def _files_left(rec: RunRecord, dest: Path, name: str) -> tuple[list[str], list[str]]:
    """The ``.part`` files kept on purpose, and every other file design.md's rule forbids:
    ``HOST/NAME`` only with the right bytes, ``HOST/NAME.part`` only for a host that did not
    complete and was not refused for want of disk space, nothing else."""
    kept, stray = [], []
    for f in sorted(p for p in dest.rglob("*") if p.is_file()):
        rel = f.relative_to(dest)
        host = rel.parts[0]
        if len(rel.parts) == 2 and rel.name == name:
            continue  # a copy: judged by its sha256
        refused = "no space left" in rec.failed.get(host, "")
        if len(rel.parts) == 2 and rel.name == f"{name}.part" and host in rec.copies_bad and not refused:
            kept.append(str(rel))
        else:
            stray.append(f"file {rel}")
    return kept, stray


def _leftovers(bench: Bench, tmp: Path, shm_before: set, ns_before: set, remote: set[int]) -> list[str]:
    """What the run left; ``remote`` (pids seen under the sshd) grows by their descendants."""
    found = []
    _wait_for_orphans(bench.keep_pids, LEFTOVER_PATIENCE)
    for _ in range(5):  # an orphan's own children become ours once it is gone
        table = _proc_table()
        for pid in list(remote):
            remote |= _descendants(pid, table)
        more = reap_leftover_children(bench.keep_pids)
        if not more:
            break
        found += more
    found += [f"temp entry {p.name}" for p in tmp.iterdir()]
    # MPICH's segments are other programs' (no launcher used here runs MPI)
    found += [
        f"/dev/shm/{n}" for n in sorted(set(os.listdir("/dev/shm")) - shm_before) if not n.startswith("mpich_shm_")
    ]
    if bench.testbed_prefix:  # namespaces of the testbed beyond those it was built with
        found += [f"namespace {n}" for n in sorted(namespaces() - ns_before) if n.startswith(bench.testbed_prefix)]
    return found


# ----------------------------------------------------------------------------- summary
def summarise(records: list[RunRecord]) -> dict:
    rows = {}
    for kind in [*FAULTS, "all"]:
        rs = [r for r in records if kind in ("all", r.fault)]
        if not rs:
            continue
        latencies = [r.report_latency for r in rs if r.report_latency is not None]
        rows[kind] = {
            "runs": len(rs),
            "faults_fired": sum(r.fault_at is not None for r in rs) if kind != "none" else 0,
            "fired_mid_run": sum(_mid_run(r) for r in rs) if kind != "none" else 0,
            "exit_codes": dict(sorted(Counter(str(r.exit_code) for r in rs).items())),
            "copies_verified": sum(len(r.copies_ok) for r in rs),
            "copies_expected": sum(len(r.copies_ok) + len(r.copies_bad) for r in rs),
            "wrong_successes": sum(bool(r.wrong_success) for r in rs),
            "hangs": sum(r.hang for r in rs),
            "late_reports": sum(lat > REPORT_TARGET for lat in latencies),
            "max_report_latency": max(latencies, default=None),
            "unexplained": sum(bool(r.unexplained) for r in rs),
            "runs_with_leftovers": sum(bool(r.leftovers) for r in rs),
            "runs_with_part_files": sum(bool(r.part_files) for r in rs),
            "runs_with_remote_leftovers": sum(bool(r.remote_leftovers) for r in rs),
            "sigterm_before_handler": sum(r.before_handler for r in rs),
        }
    return rows


def _mid_run(r: RunRecord) -> bool:
    """Did the fault come while some copy was still missing (not after the last one landed)?"""
    if r.fault_at is None:
        return False
    return len(r.done_at) < len(r.copies_ok) + len(r.copies_bad) or r.fault_at < max(r.done_at.values(), default=0.0)


def print_summary(rows: dict, records: list[RunRecord], seed: int) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"chaos: {len(records)} runs, seed {seed}")
    for col in (
        "fault",
        "runs",
        "fired",
        "mid-run",
        "exit codes",
        "copies ok",
        "wrong ok",
        "hangs",
        "late (>5 s)",
        "max report s",
        "unexplained",
        "leftovers",
        ".part kept",
        "ssh host left",
    ):
        t.add_column(col, justify="left" if col in ("fault", "exit codes") else "right")
    for kind, r in rows.items():
        lat = r["max_report_latency"]
        t.add_row(
            kind,
            str(r["runs"]),
            str(r["faults_fired"]),
            str(r["fired_mid_run"]),
            " ".join(f"{k}:{v}" for k, v in r["exit_codes"].items()),
            f"{r['copies_verified']}/{r['copies_expected']}",
            str(r["wrong_successes"]),
            str(r["hangs"]),
            str(r["late_reports"]),
            "-" if lat is None else f"{lat:.1f}",
            str(r["unexplained"]),
            str(r["runs_with_leftovers"]),
            str(r["runs_with_part_files"]),
            str(r["runs_with_remote_leftovers"]),
        )
    console = Console(width=max(Console().width, 170))
    console.print(t)
    early = rows["all"]["sigterm_before_handler"]
    if early:
        console.print(
            f"{early} SIGTERM(s) came while the interpreter still started, before topocast's first line "
            "installed its handler: the default action (exit -15, no message; design.md), not counted unexplained"
        )
    for r in records:
        problems = list(r.wrong_success)
        problems += ["hang"] if r.hang else []
        if r.report_latency is not None and r.report_latency > REPORT_TARGET:
            problems.append(f"reported {r.report_latency:.1f} s after knowable")
        problems += [r.unexplained] if r.unexplained else []
        problems += r.leftovers
        problems += [f"on the ssh host: {x}" for x in r.remote_leftovers]
        if problems:
            where = f"run {r.index} (seed {r.seed}, {r.launcher}, {r.fault} {r.target}, exit {r.exit_code})"
            console.print(f"[red]{where}[/]: " + "; ".join(problems), soft_wrap=True)


# ----------------------------------------------------------------------------- main
def _faults_available(bench: Bench) -> list[str]:
    kinds = list(FAULTS)
    if not bench.can_mount:
        kinds.remove("disk-full")
    if bench.sshd is None:
        kinds.remove("ssh-unreachable")
    if not bench.relays:
        kinds = [k for k in kinds if not k.endswith("-relay")]
    return kinds


def run_all(
    bench: Bench, runs: int, rng: random.Random, hang_after: float, verbose: bool, only=None
) -> list[RunRecord]:
    kinds = [k for k in _faults_available(bench) if only is None or k in only]
    if not kinds:
        raise SystemExit(f"no fault kind left to run (available: {', '.join(_faults_available(bench))})")
    records: list[RunRecord] = []
    cycle: list[str] = []
    for i in range(runs):
        if not cycle:
            cycle = rng.sample(kinds, len(kinds))
        kind = cycle.pop()
        if kind == "ssh-unreachable":
            launcher = "ssh"
        else:
            launcher = rng.choice(["local", "testbed"]) if bench.testbed else "local"
        try:
            rec = one_run(bench, i, rng.randrange(2**32), launcher, kind, hang_after)
        except KeyboardInterrupt:
            print(f"interrupted: {len(records)} runs done")
            break
        records.append(rec)
        if verbose:
            fired = "-" if rec.fault_at is None else f"{rec.fault_at:.2f}s"
            lat = "-" if rec.report_latency is None else f"{rec.report_latency:.1f}s"
            print(
                f"run {i:3d} {launcher:7s} {kind:16s} {rec.target:3s} fired {fired:6s} exit {rec.exit_code} "
                f"ok {len(rec.copies_ok)}/{len(bench.receivers)} {rec.duration:5.1f}s report {lat}"
                + (f" LEFT {len(rec.leftovers)}" if rec.leftovers else "")
                + (" WRONG" if rec.wrong_success else ""),
                flush=True,
            )
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=None, help="replay the draws of an earlier series")
    ap.add_argument("--size", type=int, default=8_000_000, help="message bytes (default 8 MB)")
    ap.add_argument("--hang-after", type=float, default=60.0, help="a run still going then is a hang")
    ap.add_argument("--no-testbed", action="store_true", help="local launcher only")
    ap.add_argument("--faults", default=None, metavar="K1,K2", help=f"only these kinds, among {', '.join(FAULTS)}")
    ap.add_argument("--json", default=None, metavar="FILE", help="write every run's record and the summary")
    ap.add_argument("--quiet", action="store_true", help="no line per run")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    print(f"seed {seed}  (replay: --seed {seed} --runs {args.runs})", flush=True)
    rng = random.Random(seed)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a run become our children
    with tempfile.TemporaryDirectory(prefix="chaos-bench-") as work, contextlib.ExitStack() as stack:
        bench = prepare(Path(work), args.size, rng)
        bench.can_mount = os.geteuid() == 0 and shutil.which("mount") is not None
        why = testbed_reason() if not args.no_testbed else "--no-testbed"
        if why is None:
            bench.testbed = f"chaos{secrets.token_hex(3)}"
            r = _topocast(bench.env, "testbed", "up", TOPOLOGY, "--name", bench.testbed)
            if r.returncode:
                raise SystemExit(f"testbed up failed: {r.stderr}")
            stack.callback(_topocast, bench.env, "testbed", "down", bench.testbed)
            state = json.loads((Path(work) / "testbed-state" / f"{bench.testbed}.json").read_text())
            bench.testbed_prefix = state["prefix"]
        else:
            print(f"testbed runs skipped: {why}")
        sys.path.insert(0, str(REPO / "tests"))
        from runtime.sshd import SshdUnavailable, loopback_sshd

        try:
            sshd_dir = Path(work) / "sshd"
            sshd_dir.mkdir()
            bench.sshd = stack.enter_context(loopback_sshd(sshd_dir))
            bench.keep_pids.add(bench.sshd["pid"])
        except SshdUnavailable as exc:
            print(f"ssh runs skipped: {exc}")
        only = None if args.faults is None else set(args.faults.split(","))
        records = run_all(bench, args.runs, rng, args.hang_after, not args.quiet, only)
        stack.close()  # the testbed down, the sshd stopped
        if bench.testbed_prefix:
            left = sorted(n for n in namespaces() if n.startswith(bench.testbed_prefix))
            if left:
                print(f"namespaces left after testbed down: {', '.join(left)}")
    rows = summarise(records)
    print_summary(rows, records, seed)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"seed": seed, "summary": rows, "runs": [asdict(r) for r in records]}, indent=1)
        )
    bad = rows["all"]["wrong_successes"] + rows["all"]["hangs"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
