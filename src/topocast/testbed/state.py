"""On-disk record of a running testbed (``/run/topocast/<name>.json``).

The record is written *before* anything is created and updated as namespaces appear, so
``topocast testbed down`` can remove a half-built testbed after a crash. ``down`` deletes
only what the record lists, never anything found by name pattern.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["TestbedState", "state_dir", "state_path", "load_state", "list_states", "TestbedError"]


class TestbedError(InputError):
    __test__ = False
    """The testbed cannot be built, found or used."""


def state_dir() -> Path:
    return Path(os.environ.get("TOPOCAST_STATE_DIR", "/run/topocast"))


def state_path(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise TestbedError(f"bad testbed name {name!r}", element="name")
    return state_dir() / f"{name}.json"


@dataclass
class TestbedState:
    __test__ = False
    name: str
    prefix: str
    topology_spec: str
    namespaces: list[str] = field(default_factory=list)  # every namespace we created (delete these)
    host_ns: dict[str, str] = field(default_factory=dict)  # host -> namespace
    host_addr: dict[str, str] = field(default_factory=dict)  # host -> its address (identity)
    host_ifaces: dict[str, list] = field(default_factory=dict)  # host -> [[ifname, address/prefix, link index]]
    links: list[dict] = field(default_factory=list)  # one per physical link: ends, rates, qdiscs
    warnings: list[str] = field(default_factory=list)
    netem: bool = False
    complete: bool = False

    @property
    def hosts(self) -> list[str]:
        return list(self.host_ns)

    def namespace(self, host: str) -> str:
        try:
            return self.host_ns[host]
        except KeyError:
            raise TestbedError(f"host {host!r} is not part of testbed {self.name!r}", element="host") from None

    def host_ip(self, host: str) -> str:
        self.namespace(host)
        return self.host_addr[host]

    def data_iface(self, host: str) -> str:
        """The host's first data interface (for tools such as MPICH's FI_TCP_IFACE)."""
        return self.host_ifaces[host][0][0]

    def save(self) -> None:
        p = state_path(self.name)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, p)

    def remove_file(self) -> None:
        try:
            state_path(self.name).unlink()
        except FileNotFoundError:
            pass


def list_states() -> list[str]:
    d = state_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json"))


def load_state(name: str | None = None) -> TestbedState:
    """The record of testbed ``name`` (default: the only one up)."""
    if name is None:
        names = list_states()
        if not names:
            raise TestbedError("no testbed is up (run `topocast testbed up TOPOLOGY` first)", element="--testbed")
        if len(names) > 1:
            raise TestbedError(
                f"several testbeds are up ({', '.join(names)}); choose one with --testbed", element="--testbed"
            )
        name = names[0]
    p = state_path(name)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise TestbedError(f"no testbed named {name!r} (no {p})", element="--testbed") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise TestbedError(f"unreadable testbed record ({exc})", source=str(p)) from None
    return TestbedState(**data)
