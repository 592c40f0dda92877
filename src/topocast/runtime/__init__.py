"""Performing plans for real: agents over TCP, launchers, the coordinator (docs/design.md,
"Performing plans").

``perform(plan, launcher=make_launcher("local"))`` runs a plan and returns a
:class:`RunOutcome` whose ``result`` has the shape of a prediction (``kind="measured"``).
Names are imported on first use: an agent (``python -m topocast.runtime.agent``) loads only
what it runs.
"""

_NAMES = {
    "perform": "coordinator",
    "RunOutcome": "coordinator",
    "RunError": "coordinator",
    "DEFAULT_CHUNK": "coordinator",
    "make_launcher": "launcher_registry",
    "launcher_kind": "launcher_registry",
    "LauncherOptions": "launcher_registry",
    "LAUNCHERS": "launcher_registry",
    "LocalLauncher": "launchers",
    "TestbedLauncher": "launchers",
    "SSHLauncher": "launchers",
    "load_ssh_hosts": "launchers",
}

__all__ = list(_NAMES)


def __getattr__(name: str):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'topocast.runtime' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
