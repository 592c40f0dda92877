"""Change a running emulated network on purpose: a link's rate, and background traffic.

* :func:`set_rate`: the HTB classes of one link (both directions, or one) get a new rate with
  ``tc class change``, live: flows crossing the link slow down or speed up at once, nothing
  is rebuilt. The testbed's record keeps the rate in force (``testbed status`` shows it).
* :class:`Traffic`: TCP flows from one host of the emulated network to another (a sink in the
  receiver's namespace, a sender in the sender's, ``python -m topocast.testbed.flow``), at a
  given total rate or as fast as TCP goes, for a duration or until :meth:`Traffic.stop`.
  Both processes are ours (started here, stopped by their pid); nothing else is touched.
"""

from __future__ import annotations

import subprocess
import sys
import time

from .net import FAIR_BUCKETS, HTB_BURST, _burst, _rate, require_root
from .state import TestbedError, TestbedState

__all__ = ["set_rate", "find_link", "Traffic"]


def find_link(st: TestbedState, a: str, b: str) -> dict:
    """The record of the physical link between nodes ``a`` and ``b`` (hosts or switches)."""
    matches = [rec for rec in st.links if {rec["a"], rec["b"]} == {a, b}]
    if not matches:
        nodes = sorted({x for rec in st.links for x in (rec["a"], rec["b"])})
        raise TestbedError(
            f"testbed {st.name!r} has no link between {a!r} and {b!r} (its nodes: {', '.join(nodes)})",
            element="link",
        )
    return matches[0]


def set_rate(st: TestbedState, a: str, b: str, rate: float, one_way: bool = False) -> list[dict]:
    """Shape the link ``a``-``b`` to ``rate`` bytes/s from now on: the direction from ``a`` to
    ``b``, and the other one too unless ``one_way``. Returns the changed directions' records."""
    require_root()
    if not rate > 0:
        raise TestbedError(f"expected a positive rate, got {rate}", element="rate")
    rec = find_link(st, a, b)
    forward = "ab" if rec["a"] == a else "ba"
    keys = [forward] if one_way else ["ab", "ba"]
    for key in keys:
        _change(rec[key], rate)
        rec[key]["rate"] = _rate(rate)
    st.save()
    return [rec[k] for k in keys]


def _change(direction: dict, rate: float) -> None:
    """``tc class change`` on the shaped classes of one link direction (``net._shape`` or
    ``net._shape_fair``), keeping their token bucket in seconds of the new rate."""
    ns, dev = direction["ns"], direction["dev"]
    r = _rate(rate)
    old = int(str(direction.get("rate", "0bit")).removesuffix("bit")) / 8
    seconds = direction["burst"] / old if old > 0 and direction.get("burst") else HTB_BURST
    b = _burst(rate, seconds)
    lines = []
    if direction.get("leaf", "").startswith("fair"):
        lines.append(f"class change dev {dev} parent 1: classid 1:1 htb rate {r} ceil {r} burst {b} cburst {b}")
        share = _rate(max(rate / FAIR_BUCKETS, 1000))
        lines += [
            f"class change dev {dev} parent 1:1 classid 1:{0x100 + i:x} htb rate {share} ceil {r} cburst {b}"
            for i in range(FAIR_BUCKETS)
        ]
    else:
        quantum = max(1514, min(60000, int(rate / 10)))
        lines.append(
            f"class change dev {dev} parent 1: classid 1:10 htb rate {r} ceil {r} burst {b} cburst {b} quantum {quantum}"
        )
    if "first" in direction.get("leaf", ""):  # the small-packet class is shaped at the link rate too
        lines.append(f"class change dev {dev} parent 1: classid 1:2 htb rate {r} ceil {r} burst {b} cburst {b}")
    res = subprocess.run(["tc", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if res.returncode:
        raise TestbedError(f"tc class change on {ns}/{dev} failed: {res.stderr.strip()[-300:]}", element="testbed")


class Traffic:
    """Background TCP flows from host ``a`` to host ``b`` of the testbed ``st``.

    ``rate``: total bytes/s over the ``flows`` flows (None: as fast as TCP goes);
    ``duration``: seconds (None: until :meth:`stop`). Use as a context manager, or call
    :meth:`start` and :meth:`stop`; :meth:`stop` returns the bytes the sink received, and
    :attr:`seconds` is the time from its first byte to its last."""

    PORT = 47_000

    def __init__(
        self, st: TestbedState, a: str, b: str, rate: float | None = None, duration: float | None = None, flows: int = 1
    ):
        require_root()
        if a == b or a not in st.host_ns or b not in st.host_ns:
            raise TestbedError(
                f"traffic needs two different hosts of testbed {st.name!r}, got {a!r} and {b!r}", element="traffic"
            )
        if rate is not None and not rate > 0:
            raise TestbedError(f"expected a positive rate, got {rate}", element="--rate")
        if flows < 1:
            raise TestbedError(f"expected at least one flow, got {flows}", element="--flows")
        self.st, self.a, self.b, self.rate, self.duration, self.flows = st, a, b, rate, duration, flows
        self.sink: subprocess.Popen | None = None
        self.sender: subprocess.Popen | None = None
        self.received: int | None = None  # bytes the sink got (after stop)
        self.seconds = 0.0  # from the sink's first byte to its last

    def _argv(self, host: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.st.namespace(host), sys.executable, "-m", "topocast.testbed.flow", *args]

    def start(self) -> Traffic:
        addr = self.st.host_addr[self.b]
        self.sink = subprocess.Popen(
            self._argv(self.b, "sink", addr, str(self.PORT)), stdout=subprocess.PIPE, text=True
        )
        line = self.sink.stdout.readline() if self.sink.stdout else ""
        if line.strip() != "listening":
            self.stop()
            raise TestbedError(f"the traffic sink on {self.b} did not start", element="traffic")
        args = ["send", addr, str(self.PORT), str(self.flows), str(self.rate or 0), str(self.duration or 0)]
        self.sender = subprocess.Popen(self._argv(self.a, *args), stdout=subprocess.PIPE, text=True)
        line = self.sender.stdout.readline() if self.sender.stdout else ""
        if line.strip() != "sending":
            self.stop()
            raise TestbedError(
                f"the traffic from {self.a} to {self.b} did not start ({line.strip()})", element="traffic"
            )
        return self

    def wait(self) -> int | None:
        """Until the duration is over (or the sender stops); then :meth:`stop`."""
        if self.sender is not None:
            self.sender.wait()
        return self.stop()

    def stop(self) -> int | None:
        for p in (self.sender, self.sink):
            if p is not None and p.poll() is None:
                p.terminate()
        for p in (self.sender, self.sink):
            if p is not None:
                if p is self.sender and p.stdout is not None:
                    p.stdout.close()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.sink is not None and self.sink.stdout is not None and self.received is None:
            tail = self.sink.stdout.read().split()
            if len(tail) >= 2 and tail[-2].isdigit():
                self.received, self.seconds = int(tail[-2]), float(tail[-1])
            self.sink.stdout.close()
        return self.received

    def __enter__(self) -> Traffic:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_seconds(seconds: float) -> None:
    """Sleep, in small steps (a Ctrl-C stops the traffic at once)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(0.2, end - time.monotonic()))
