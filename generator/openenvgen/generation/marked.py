"""Marked files: generated only between two markers, the user's text around them kept.

`README.md` is the one marked file. Its generated block runs from the
`<!-- openenv-gen:begin -->` marker (with the generated-file header line just above it)
through the `<!-- openenv-gen:end -->` marker; the text before and after is the user's and
survives regeneration byte for byte. Rendering stays pure (the template renders the whole
file, with a default user part): `merge_marked` splices the fresh block into the file on
disk when it is written, and `check` compares with that same splice.
"""

from __future__ import annotations

from openenvgen.generation.layout import HEADER_TEXT

BEGIN_MARKER = "<!-- openenv-gen:begin -->"
END_MARKER = "<!-- openenv-gen:end -->"
MARKED_FILES = frozenset({"README.md"})
_MD_HEADER = f"<!-- {HEADER_TEXT} -->"


class MarkerError(ValueError):
    """The file has no (or broken) generated-block markers."""


def split_marked(text: str) -> tuple[str, str, str]:
    """`(before, block, after)`: the generated block runs from the header line (when it
    sits right above the begin marker) or the begin marker through the end marker's line."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN_MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise MarkerError(
            f"expected one {BEGIN_MARKER} line followed by one {END_MARKER} line (found {len(begins)} and {len(ends)})"
        )
    start = begins[0]
    if start > 0 and lines[start - 1].strip() == _MD_HEADER:
        start -= 1
    stop = ends[0] + 1
    block = "".join(lines[start:stop])
    if not block.endswith("\n"):
        block += "\n"
    return "".join(lines[:start]), block, "".join(lines[stop:])


def merge_marked(existing: str, rendered: str) -> str:
    """`existing` with its generated block replaced by `rendered`'s; raises MarkerError if
    `existing` has no usable markers."""
    _, block, _ = split_marked(rendered)
    before, _, after = split_marked(existing)
    return before + block + after
