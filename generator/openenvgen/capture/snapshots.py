"""Make the catalog's snapshots from captures: `python -m openenvgen.capture.snapshots DIR`.

DIR holds one capture per upstream env folder (`schema.json`, `metadata.json`, and for
MCP envs `mcp_tools_list.json` or `tools.json`; see `recording`), as `openenv-gen capture`
records them. Every catalog entry's snapshot (`data/snapshots/<name>.json`, the server
interface its package is generated from) is rewritten from the capture of its
`env_folder`, and its seed verdict (the capture's `seed.json`) into `data/seeding.json`;
when DIR has the capture index (`capture.json`), the upstream commit it was captured from
is written into `data/catalog.toml`'s `[source]`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openenvgen.capture.recording import INDEX_FILE, SEED_FILE
from openenvgen.capture.seed_check import summary
from openenvgen.catalog.reader import DATA, SEEDING_FILE, read_catalog
from openenvgen_schemas.interface import interface_schemas, tools_of


def interface_from_capture(folder: Path) -> dict[str, Any]:
    """The server interface a capture holds, as a snapshot keeps it: `/schema`'s parts a
    package is generated from (never its generic `state`), `/metadata`, the tool list."""
    schema_file = folder / "schema.json"
    schema = interface_schemas(str(schema_file), json.loads(schema_file.read_text("utf-8")))
    # No metadata.json: the env's /metadata failed here (see its source.json).
    metadata_file = folder / "metadata.json"
    metadata = json.loads(metadata_file.read_text("utf-8")) if metadata_file.is_file() else {}
    tools = None
    listing = folder / "mcp_tools_list.json"
    if listing.is_file():
        tools = tools_of(str(listing), json.loads(listing.read_text("utf-8")))
    elif (folder / "tools.json").is_file():  # the WebSocket `list_tools` step's reply
        tools = json.loads((folder / "tools.json").read_text("utf-8"))["data"]["observation"]["tools"]
    return {"schema": schema, "metadata": metadata, "tools": tools}


def snapshot_from_capture(folder: Path) -> str:
    """The text of the snapshot made from the capture in `folder`."""
    return json.dumps(interface_from_capture(folder), indent=2, ensure_ascii=False) + "\n"


def seed_entry(measured: dict[str, Any]) -> dict[str, Any]:
    """A capture's `seed.json` as the catalog keeps it: the verdict, one line for people,
    and the evidence."""
    verdict = measured.get("verdict", "unmeasured")
    return {"verdict": verdict, "summary": summary(measured), "evidence": measured.get("evidence", {})}


def with_source(catalog_text: str, repo: str, commit: str) -> str:
    """`catalog.toml` with its `[source]` table saying where the snapshots come from
    (comments and everything else kept as they are; a missing table is added)."""
    import tomlkit  # the one writer of catalog.toml: it keeps its comments

    document = tomlkit.parse(catalog_text)
    if "source" in document:
        # tomlkit types a lookup as any item (a table or a value); catalog.toml's [source] is a table.
        document["source"]["repo"] = repo  # type: ignore[index]
        document["source"]["commit"] = commit  # type: ignore[index]
    else:
        table = tomlkit.table()
        table.update({"repo": repo, "commit": commit})
        document["source"] = table
    return tomlkit.dumps(document)


def write_catalog(captures: Path, data: Path = DATA, *, echo: Callable[[str], None] = print) -> None:
    """Rewrite `data`'s snapshots, seed verdicts (and its source commit) from the captures
    in `captures`."""
    catalog_toml = data / "catalog.toml"
    envs = read_catalog(catalog_toml)["envs"]
    out = data / "snapshots"
    out.mkdir(parents=True, exist_ok=True)
    missing = []
    seeding_file = data / SEEDING_FILE
    seeding = json.loads(seeding_file.read_text("utf-8")) if seeding_file.is_file() else {}
    for name, entry in envs.items():
        folder = captures / entry["env_folder"]
        if not (folder / "schema.json").is_file():
            missing.append(f"{name} ({folder})")
            continue
        (out / f"{name}.json").write_text(snapshot_from_capture(folder), "utf-8")
        if (folder / SEED_FILE).is_file():
            seeding[name] = seed_entry(json.loads((folder / SEED_FILE).read_text("utf-8")))
        echo(f"{name}: {folder}")
    seeding = {name: seeding[name] for name in envs if name in seeding}
    seeding_file.write_text(json.dumps(seeding, indent=2, ensure_ascii=False) + "\n", "utf-8")
    index = captures / INDEX_FILE
    if index.is_file():
        captured = json.loads(index.read_text("utf-8"))
        if captured.get("commit"):
            text = catalog_toml.read_text("utf-8")
            updated = with_source(text, captured["repo"], captured["commit"])
            if updated != text:
                catalog_toml.write_text(updated, "utf-8")
    if missing:
        echo(f"kept the old snapshots of envs with no capture in {captures}: {', '.join(missing)}")


def main(argv: list[str] | None = None) -> int:
    """`python -m openenvgen.capture.snapshots CAPTURES_DIR`: rewrite the embedded catalog."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m openenvgen.capture.snapshots CAPTURES_DIR", file=sys.stderr)
        return 64
    write_catalog(Path(args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
