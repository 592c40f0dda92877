"""The registry: one planner looked up imports one module; listings keep one order."""

from __future__ import annotations

import subprocess
import sys

_LISTING = "from topocast.planners import available_planners; print([i.name for i in available_planners()])"


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_looking_up_one_planner_imports_only_its_module():
    code = (
        "import sys\n"
        "from topocast.planners import get_planner\n"
        "assert get_planner('broadcast', 'stable').name == 'stable'\n"
        "print(sorted(m for m in sys.modules if m.startswith('topocast.planners.broadcast.')))\n"
    )
    imported = _python(code)
    assert "topocast.planners.broadcast.stable" in imported
    assert "topocast.planners.broadcast.binomial" not in imported


def test_the_listing_order_does_not_depend_on_the_first_planner_looked_up():
    plain = _python(_LISTING)
    after_lookup = _python(
        "from topocast.planners import get_planner; get_planner('broadcast', 'two_tree')\n" + _LISTING
    )
    assert plain == after_lookup
    assert plain.index("'binomial'") < plain.index("'two_tree'")


def test_names_that_are_not_a_planner_module_still_resolve_or_fail_clearly():
    code = (
        "from topocast.errors import UnknownPlanner\n"
        "from topocast.planners import get_planner\n"
        "print(get_planner('broadcast', 'gridmpi').name)\n"  # lives in gridmpi_bcast.py
        "try:\n"
        "    get_planner('broadcast', 'os')\n"
        "except UnknownPlanner as exc:\n"
        "    print('unknown', 'valid planners' in str(exc))\n"
    )
    assert _python(code).split("\n") == ["gridmpi", "unknown True"]


def test_a_new_planner_module_is_found_without_being_listed(tmp_path):
    (tmp_path / "zz_new_planner.py").write_text(
        "from topocast.planners.registration import register_planner\n"
        "@register_planner('broadcast', 'zz_new', summary='test', reference='test')\n"
        "def plan_zz(topology, request):\n"
        "    raise NotImplementedError\n"
    )
    code = (
        "import topocast.planners.broadcast as pkg\n"
        f"pkg.__path__.append({str(tmp_path)!r})\n"
        "from topocast.planners import available_planners\n"
        "names = [i.name for i in available_planners('broadcast')]\n"
        "print(names.index('zz_new') < names.index('auto') == len(names) - 1)\n"
    )
    assert _python(code) == "True"


def test_every_registered_planner_comes_from_a_discovered_module():
    code = (
        "from topocast.planners import available_planners\n"
        "from topocast.planners.registry import planner_modules\n"
        "found = set(planner_modules())\n"
        "print(sorted({i.func.__module__ for i in available_planners()} - found), len(available_planners()))\n"
    )
    missing, count = _python(code).rsplit(" ", 1)
    assert missing == "[]" and int(count) >= 29
