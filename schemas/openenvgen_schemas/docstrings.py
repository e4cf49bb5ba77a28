"""A tool's docstring read the way FastMCP renders it, so a FastMCP upgrade is not reported as drift.

The same environment served with another FastMCP version lists its tools differently:
FastMCP 3.1 sends a tool's whole docstring as its description (summary, `Args:`,
`Returns:` sections, indentation and all) and leaves the arguments undescribed; FastMCP 3.4
sends only the summary and moves each `Args:` entry into that argument's `description`.
So the diff compares (1) a tool's summary, the text before the first docstring section
heading (`Args:`, `Returns:`, `Raises:`, ... in Google style, a heading underlined with
dashes in NumPy style, or a `:param ...:` field in Sphinx style), whitespace collapsed, and
(2) each argument's description, taken from the docstring's `Args:`/`Parameters` section
where the schema gives none.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from openenvgen_schemas.normalise import collapse_whitespace

# Google-style section headings (`Args:` alone on its line), and NumPy-style ones (a heading
# underlined with dashes). Sphinx-style fields (`:param x:`, `:returns:`) start a section too.
_GOOGLE_SECTION = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|kwargs|other parameters|"
    r"returns?|yields?|raises|exceptions|examples?|notes?|attributes|see also|warnings?|references|todo)\s*:\s*$",
    re.IGNORECASE,
)
_NUMPY_UNDERLINE = re.compile(r"^-{3,}\s*$")
_SPHINX_FIELD = re.compile(r"^:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|yields?)\b")
_SPHINX_PARAM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:\S+\s+)?([A-Za-z_]\w*)\s*:\s*(.*)$")
_ARG_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs", "other parameters"}
)
# `name: text` / `name (type): text` (Google); `name : type` or a bare `name`, the text
# indented below (NumPy).
_GOOGLE_ARG = re.compile(r"^\*{0,2}([A-Za-z_]\w*)(?:\s*\([^)]*\))?:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^([A-Za-z_]\w*)(?:\s+:\s+.*)?$")


def _sections(description: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(summary, [(heading, body lines)]) of a docstring-like description."""
    lines = inspect.cleandoc(description).splitlines()
    summary: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        heading = None
        if _GOOGLE_SECTION.match(stripped):
            heading = stripped.rstrip(":").strip().lower()
        elif stripped and i + 1 < len(lines) and _NUMPY_UNDERLINE.match(lines[i + 1].strip()):
            heading = stripped.lower()
            i += 1
        elif _SPHINX_FIELD.match(stripped):
            # Each Sphinx field is a section of its own, its first line the field itself.
            sections.append(("sphinx", [stripped]))
            i += 1
            continue
        if heading is not None:
            sections.append((heading, []))
        elif sections:
            sections[-1][1].append(lines[i])
        else:
            summary.append(lines[i])
        i += 1
    return "\n".join(summary), sections


def tool_summary(description: str) -> str:
    """A tool description without its docstring sections, whitespace collapsed."""
    return collapse_whitespace(_sections(description)[0])


def documented_args(description: str) -> dict[str, str]:
    """Argument texts of a docstring's `Args:`/`Parameters`/`:param x:` sections, whitespace collapsed."""
    out: dict[str, str] = {}
    for heading, body in _sections(description)[1]:
        if heading == "sphinx":
            match = _SPHINX_PARAM.match(body[0])
            if match:
                out[match.group(1)] = " ".join([match.group(2), *(line.strip() for line in body[1:])])
            continue
        if heading not in _ARG_SECTIONS:
            continue
        indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
        entry_indent = min(indents, default=0)
        current: str | None = None
        for line in body:
            text = line.strip()
            if not text:
                continue
            if len(line) - len(line.lstrip()) == entry_indent:
                numpy, google = _NUMPY_ARG.match(text), _GOOGLE_ARG.match(text)
                matched = numpy or google
                current = matched.group(1) if matched else None
                if current is not None:
                    out[current] = google.group(2) if google and not numpy else ""
            elif current is not None:
                out[current] = f"{out[current]} {text}"
    return {name: collapse_whitespace(text) for name, text in out.items() if text.strip()}


def with_documented_args(schema: dict[str, Any], description: str) -> dict[str, Any]:
    """`schema` with each undescribed top-level argument described as its tool's docstring documents it."""
    # What newer FastMCP versions do themselves.
    documented = documented_args(description)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not documented or not isinstance(properties, dict):
        return schema
    filled = {
        name: (
            {**prop, "description": documented[name]}
            if isinstance(prop, dict) and "description" not in prop and name in documented
            else prop
        )
        for name, prop in properties.items()
    }
    return {**schema, "properties": filled}
