"""Make the catalog's snapshots from real captures: `python -m openenvgen.corpus DIR`.

DIR holds one folder per env (`schema.json`, `metadata.json`, and for MCP envs
`mcp_tools_list.json` or `tools.json`), as `openenv-gen capture` records them from
upstream servers. Every catalog entry's snapshot (`data/snapshots/<name>.json`) is
rewritten from its `corpus` folder, and its seed verdict (the folder's `seed.json`) into
`data/seeding.json`; when DIR has the capture index (`capture.json`), the upstream commit
it was captured from is written into `data/catalog.toml`'s `[source]`.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

DATA = Path(__file__).parent / "data"


def capture_from_corpus(folder: Path) -> dict[str, Any]:
    schema = json.loads((folder / "schema.json").read_text("utf-8"))
    # No metadata.json: the env's /metadata failed here (see its source.json).
    metadata_file = folder / "metadata.json"
    metadata = json.loads(metadata_file.read_text("utf-8")) if metadata_file.is_file() else {}
    tools = None
    if (folder / "mcp_tools_list.json").exists():
        tools = json.loads((folder / "mcp_tools_list.json").read_text("utf-8"))["result"]["tools"]
    elif (folder / "tools.json").exists():
        tools = json.loads((folder / "tools.json").read_text("utf-8"))["data"]["observation"]["tools"]
    # /schema.state is the generic base State in every capture: never generate from it.
    kept = {"action": schema["action"], "observation": schema["observation"]}
    if "reset_observation" in schema:  # served by openenv >= 0.10
        kept["reset_observation"] = schema["reset_observation"]
    return {
        "schema": kept,
        "metadata": metadata,
        "tools": tools,
    }


def snapshot_text(folder: Path) -> str:
    return json.dumps(capture_from_corpus(folder), indent=2, ensure_ascii=False) + "\n"


SEEDING_FILE = "seeding.json"
"""Per catalog entry: whether its env honours `seed` (verdict, summary, evidence)."""


def seed_entry(measured: dict[str, Any]) -> dict[str, Any]:
    """A capture's `seed.json` as the catalog keeps it: the verdict, one line for people,
    and the evidence."""
    from openenvgen.seeding import summary

    return {"verdict": measured.get("verdict", "unmeasured"), "summary": summary(measured), "evidence": measured.get("evidence", {})}


_SOURCE_TABLE = re.compile(r"^\[source\]\n(?:[^\[\n].*\n|\n)*?(?=^\[|\Z)", re.MULTILINE)


def with_source(catalog_text: str, repo: str, commit: str) -> str:
    """`catalog.toml` with its `[source]` table saying where the snapshots come from."""
    table = f'[source]\nrepo = "{repo}"\ncommit = "{commit}"\n\n'
    if _SOURCE_TABLE.search(catalog_text):
        return _SOURCE_TABLE.sub(lambda _: table, catalog_text, count=1)
    first_env = catalog_text.index("[envs.")
    return catalog_text[:first_env] + table + catalog_text[first_env:]


def write_catalog(corpus: Path, data: Path = DATA, *, echo: Callable[[str], None] = print) -> None:
    """Rewrite `data`'s snapshots (and its source commit) from the captures in `corpus`."""
    catalog_toml = data / "catalog.toml"
    text = catalog_toml.read_text("utf-8")
    raw = tomllib.loads(text)
    out = data / "snapshots"
    out.mkdir(parents=True, exist_ok=True)
    missing = []
    seeding_file = data / SEEDING_FILE
    seeding = json.loads(seeding_file.read_text("utf-8")) if seeding_file.is_file() else {}
    for name, entry in raw["envs"].items():
        folder = corpus / entry["corpus"]
        if not (folder / "schema.json").is_file():
            missing.append(f"{name} ({folder})")
            continue
        (out / f"{name}.json").write_text(snapshot_text(folder), "utf-8")
        if (folder / "seed.json").is_file():
            seeding[name] = seed_entry(json.loads((folder / "seed.json").read_text("utf-8")))
        echo(f"{name}: {folder}")
    seeding = {name: seeding[name] for name in raw["envs"] if name in seeding}
    seeding_file.write_text(json.dumps(seeding, indent=2, ensure_ascii=False) + "\n", "utf-8")
    index = corpus / "capture.json"
    if index.is_file():
        captured = json.loads(index.read_text("utf-8"))
        if captured.get("commit"):
            updated = with_source(text, captured["repo"], captured["commit"])
            if updated != text:
                catalog_toml.write_text(updated, "utf-8")
    if missing:
        echo(f"kept the old snapshots of envs with no capture in {corpus}: {', '.join(missing)}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m openenvgen.corpus CAPTURES_DIR", file=sys.stderr)
        return 64
    write_catalog(Path(args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
