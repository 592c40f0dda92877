"""The ``measured:`` section of a topology file, which :mod:`topocast.probe` writes: how the
links were measured, how sure each estimate is, and the switches an inferred tree could not
tell apart; read with every check, and said in words for ``topology show``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .fields import check_keys, expect, fail, node_name, time_value
from .model import PhysicalLink

MEASURED_KEYS = ("by", "launcher", "measurements", "duration", "goodput", "estimates", "alternatives", "verified")
ALTERNATIVE_KEYS = ("switch", "or_merged_into", "chosen", "worst_ratio")
ESTIMATE_KEYS = ("a", "b", "direction", "samples", "spread", "at_least", "uncertain")


def parse_measured(m: object, links: Sequence[PhysicalLink], source: str | None, data: object) -> dict:
    """The ``measured:`` section a probe writes: how many measurements, how long, and per
    link direction the number of samples, their spread (a fraction) and flags."""
    if m is None:
        return {}
    el = "measured"
    m = expect(m, dict, source, data, el, "a mapping with keys " + ", ".join(MEASURED_KEYS))
    check_keys(m, MEASURED_KEYS, source, el)
    out: dict = {}
    for k in ("by", "launcher"):
        if k in m:
            out[k] = str(expect(m[k], str, source, m, f"{el}: {k}", "a string"))
    if "measurements" in m:
        n = expect(m["measurements"], int, source, m, f"{el}: measurements", "a whole number of measurements")
        if n < 0:
            raise fail(source, m, f"{el}: measurements", f"expected a number >= 0, got {n}")
        out["measurements"] = n
    if "duration" in m:
        out["duration"] = time_value(m["duration"], source, m, f"{el}: duration")
    if "goodput" in m:
        g = expect(m["goodput"], (int, float), source, m, f"{el}: goodput", "a fraction in (0, 1]")
        if not 0 < g <= 1:
            raise fail(source, m, f"{el}: goodput", f"expected a fraction in (0, 1], got {g}")
        out["goodput"] = float(g)
    ends = {frozenset((pl.a, pl.b)) for pl in links}
    estimates = []
    for i, e in enumerate(expect(m.get("estimates") or [], list, source, m, f"{el}: estimates", "a list")):
        where = f"{el}: estimates[{i}]"
        e = expect(e, dict, source, m, where, "a mapping with keys " + ", ".join(ESTIMATE_KEYS))
        check_keys(e, ESTIMATE_KEYS, source, where)
        a, b = node_name(e.get("a"), source, e, f"{where}: a"), node_name(e.get("b"), source, e, f"{where}: b")
        if frozenset((a, b)) not in ends:
            raise fail(source, e, where, f"no link joins {a!r} and {b!r}")
        d = e.get("direction", "a->b")
        if d not in ("a->b", "b->a"):
            raise fail(source, e, f"{where}: direction", f"expected 'a->b' or 'b->a', got {d!r}")
        est = {"a": a, "b": b, "direction": d}
        if "samples" in e:
            n = expect(e["samples"], int, source, e, f"{where}: samples", "a whole number >= 1")
            if n < 1:
                raise fail(source, e, f"{where}: samples", f"expected a whole number >= 1, got {n}")
            est["samples"] = n
        if "spread" in e:
            sp = expect(e["spread"], (int, float), source, e, f"{where}: spread", "a fraction >= 0")
            if not (math.isfinite(sp) and sp >= 0):
                raise fail(source, e, f"{where}: spread", f"expected a fraction >= 0, got {sp}")
            est["spread"] = float(sp)
        for flag in ("at_least", "uncertain"):
            if flag in e:
                est[flag] = expect(e[flag], bool, source, e, f"{where}: {flag}", "true or false")
        estimates.append(est)
    if estimates:
        out["estimates"] = estimates
    alternatives = _alternatives(m.get("alternatives"), source, m)
    if alternatives:
        out["alternatives"] = alternatives
    if m.get("verified") is not None:  # what ``probe --verify`` compared and corrected (a report, kept as is)
        v = expect(m["verified"], dict, source, m, f"{el}: verified", "a mapping (what probe --verify wrote)")
        expect(v.get("links", []), list, source, v, f"{el}: verified: links", "a list")
        out["verified"] = v
    return out


def _alternatives(items: object, source: str | None, m: dict) -> list[dict]:
    """``measured: alternatives``: per ambiguous switch of an inferred tree, the neighbour
    switches it may be one with (the same measurements), the tree kept, and how much of the
    best plan a plan made on it keeps at worst on any of the alternatives."""
    el = "measured: alternatives"
    out = []
    for i, r in enumerate(expect(items or [], list, source, m, el, "a list")):
        where = f"{el}[{i}]"
        r = expect(r, dict, source, m, where, "a mapping with keys " + ", ".join(ALTERNATIVE_KEYS))
        check_keys(r, ALTERNATIVE_KEYS, source, where)
        into = expect(r.get("or_merged_into"), list, source, r, f"{where}: or_merged_into", "a list of switches")
        worst = expect(r.get("worst_ratio"), (int, float), source, r, f"{where}: worst_ratio", "a fraction")
        if not (math.isfinite(worst) and 0 <= worst <= 1.5):
            raise fail(source, r, f"{where}: worst_ratio", f"expected a fraction in [0, 1.5], got {worst}")
        out.append(
            {
                "switch": node_name(r.get("switch"), source, r, f"{where}: switch"),
                "or_merged_into": [node_name(z, source, r, f"{where}: or_merged_into") for z in into],
                "chosen": node_name(r.get("chosen"), source, r, f"{where}: chosen"),
                "worst_ratio": float(worst),
            }
        )
    return out


def measured_notes(measured: Mapping | None) -> list[str]:
    """The probe's flags, in words (``topology show`` prints a topology's notes)."""
    out = []
    for e in (measured or {}).get("estimates", ()):
        what = f"measured {e['a']}-{e['b']} {e['direction']}"
        if e.get("at_least"):
            out.append(f"{what}: a lower bound (the transfers could not fill the link)")
        if e.get("uncertain"):
            out.append(f"{what}: uncertain (samples: {e.get('samples', 1)}, spread {e.get('spread', 0.0):.0%})")
    for e in ((measured or {}).get("verified") or {}).get("links", ()):
        if isinstance(e, dict) and e.get("outcome") == "corrected":
            out.append(
                f"verified: {e.get('link')} corrected from {e.get('file_bit_s', 0) / 1e6:.4g} to "
                f"{e.get('corrected_bit_s', 0) / 1e6:.4g} Mbit/s ({e.get('pair')} measured alone)"
            )
    for r in (measured or {}).get("alternatives", ()):
        out.append(
            f"switch {r['switch']} may be one with {' or '.join(r['or_merged_into'])} (same measurements); "
            f"kept {r['chosen']}: its plans keep {r['worst_ratio']:.0%} of the best at worst"
        )
    return out
