"""Make the catalog's snapshots from real captures: `python -m openenvgen.corpus DIR`.

DIR holds one folder per env (`schema.json`, `metadata.json`, and for MCP envs
`mcp_tools_list.json` or `tools.json`), as recorded from upstream servers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from openenvgen.catalog import entries


def capture_from_corpus(folder: Path) -> dict[str, Any]:
    schema = json.loads((folder / "schema.json").read_text("utf-8"))
    metadata = json.loads((folder / "metadata.json").read_text("utf-8"))
    tools = None
    if (folder / "mcp_tools_list.json").exists():
        tools = json.loads((folder / "mcp_tools_list.json").read_text("utf-8"))["result"]["tools"]
    elif (folder / "tools.json").exists():
        tools = json.loads((folder / "tools.json").read_text("utf-8"))["data"]["observation"]["tools"]
    # /schema.state is the generic base State in every capture: never generate from it.
    return {
        "schema": {"action": schema["action"], "observation": schema["observation"]},
        "metadata": metadata,
        "tools": tools,
    }


def snapshot_text(folder: Path) -> str:
    return json.dumps(capture_from_corpus(folder), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    corpus = Path(args[0] if args else "../shared/corpus")
    out = Path(__file__).parent / "data" / "snapshots"
    out.mkdir(parents=True, exist_ok=True)
    for entry in entries().values():
        (out / f"{entry.name}.json").write_text(snapshot_text(corpus / entry.corpus), "utf-8")
        print(f"{entry.name}: {corpus / entry.corpus}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
