"""Every exception topocast defines derives from TopocastError, so that one ``except``
(the command line's, a caller's) sees every error topocast raises on purpose."""

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import topocast
from topocast.errors import TopocastError

#: BaseException subclasses that must stay outside ``Exception`` on purpose (and so outside
#: TopocastError): an ``except Exception`` anywhere must not swallow them.
NOT_ERRORS = {
    # SIGTERM delivered as a KeyboardInterrupt, to unwind a command like Ctrl-C does
    "topocast.cli.main.Terminated",
}


def _modules():
    for info in pkgutil.walk_packages(topocast.__path__, "topocast."):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # running it runs the command line
            continue
        yield importlib.import_module(info.name)


def _exception_classes():
    """(qualified name, class) of every exception class defined at module or class level."""
    for module in _modules():
        todo = [obj for obj in vars(module).values() if inspect.isclass(obj) and obj.__module__ == module.__name__]
        while todo:
            cls = todo.pop()
            todo.extend(v for v in vars(cls).values() if inspect.isclass(v) and v.__module__ == module.__name__)
            if issubclass(cls, BaseException):
                yield f"{module.__name__}.{cls.__qualname__}", cls


def test_every_exception_class_derives_from_topocast_error():
    found = dict(_exception_classes())
    assert "topocast.runtime.protocol.ProtocolError" in found  # the walk reaches the runtime
    outside = sorted(
        name
        for name, cls in found.items()
        if not issubclass(cls, TopocastError)
        and not issubclass(cls, Warning)  # warning categories are not errors
        and name not in NOT_ERRORS
    )
    assert not outside, f"exception classes not under TopocastError: {outside}"
    for name in NOT_ERRORS:
        assert not issubclass(found[name], Exception), f"{name} is an Exception: put it under TopocastError"


def test_no_exception_class_hides_inside_a_function():
    """The walk above sees module- and class-level classes only: a class defined inside a
    function would escape it, so there must be none that looks like an exception."""
    root = Path(topocast.__file__).parent
    hidden = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ClassDef) and any(
                        ast.unparse(b).endswith(("Error", "Exception", "Failure", "Interrupt")) for b in node.bases
                    ):
                        hidden.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert not hidden, hidden


def test_protocol_and_store_errors_keep_their_builtin_bases():
    from topocast.runtime.protocol import AuthError, ProtocolError
    from topocast.runtime.store import SourceChanged, StoreError

    for cls in (ProtocolError, AuthError, SourceChanged):
        assert issubclass(cls, ConnectionError) and issubclass(cls, TopocastError)
    err = StoreError("cannot write /x: No space left on device", 28)
    assert isinstance(err, TopocastError) and err.errno == 28 and str(err).startswith("cannot write /x")
