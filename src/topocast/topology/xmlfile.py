"""Reading an XML topology file (SimGrid platforms, Topology Zoo GraphML) with errors that
name the file and, for malformed XML, the line and column."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from ..errors import TopologyError

__all__ = ["read_xml"]


def read_xml(path: str | os.PathLike[str]) -> ET.Element:
    """The root element of the XML file at ``path``, or a :class:`TopologyError`."""
    source = str(path)
    try:
        return ET.parse(source).getroot()
    except FileNotFoundError:
        raise TopologyError("no such file", source=source) from None
    except ET.ParseError as exc:
        line, col = exc.position
        detail = str(exc).split(":")[0]
        raise TopologyError(f"malformed XML at line {line}, column {col + 1}: {detail}", source=source) from None
    except OSError as exc:
        raise TopologyError(f"cannot read the file ({exc})", source=source) from None
