"""Render a package: spec in, `{relative path: text}` out. Pure: no I/O but template reads.

Every string that came from a server reaches a template only through a filter that
makes it inert in the target format (`py` → a double-quoted Python literal, `toml` → a TOML
string, `md` → Markdown text). Generated Python identifiers come from the spec's
validated name and codegen's sanitised class names, never from raw server text.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jinja2

from openenvgen.generation.codegen import Models, cached_module, generate_models
from openenvgen.generation.layout import HEADER, HEADER_TEXT

# Defined in `layout`; importers read them here too.
from openenvgen.generation.layout import LOCK_FILE as LOCK_FILE
from openenvgen.generation.layout import RUNTIME_DISTRIBUTION as RUNTIME_DISTRIBUTION
from openenvgen.generation.layout import sha256_text as sha256_text
from openenvgen.generation.layout import templates_dir as templates_dir
from openenvgen.generation.python_format import format_module
from openenvgen.generation.trl_tools import trl_tools
from openenvgen.spec import SPEC_FORMAT, EnvSpec
from openenvgen_schemas.normalise import union_members

RUNTIME_REQUIREMENT = f"{RUNTIME_DISTRIBUTION}>=0.1.0,<0.2"
"""What a generated package requires of it; `publish` refuses a runtime version outside it."""
VERIFIERS_REQUIREMENT = "verifiers>=0.4,<0.5"
"""What a generated package requires of verifiers, directly (the runtime's own range): prime's
`env push` classifies an environment's runtime by the package's own verifiers requirement."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _py(value: Any, level: int = 0) -> str:
    """A Python literal for JSON data, written as ruff formats it under any line length:
    strings in double quotes unless they hold more double than single quotes (ruff's
    choice), and every non-empty list or dict one item a line with a trailing comma (which
    keeps it so). `level` is the indent level of the line it starts on. The scaffold's
    tests template writes its example action by the same rules (its `py` macro: copier
    renders that file too, with Jinja alone); the scaffold tests hold the two to one output."""
    if isinstance(value, str):
        return _py_str(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return json.dumps(value).replace("e+", "e")  # ruff writes 1e100, not 1e+100
    inner = "    " * (level + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{_py(str(key))}: {_py(item, level + 1)},\n" for key, item in value.items()]
        return "{\n" + "".join(items) + "    " * level + "}"
    if isinstance(value, list | tuple) and value:
        return "[\n" + "".join(f"{inner}{_py(item, level + 1)},\n" for item in value) + "    " * level + "]"
    if isinstance(value, dict | list | tuple):
        return "{}" if isinstance(value, dict) else "[]"
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _py_str(text: str) -> str:
    body = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if not body.isprintable():
        # JSON's escapes for the rest; its quotes as \u0022, so ruff keeps the double quotes.
        inner = json.dumps(text)[1:-1].split("\\\\")
        return '"' + "\\\\".join(part.replace('\\"', "\\u0022") for part in inner) + '"'
    if text.count('"') > text.count("'"):
        return "'" + body.replace("'", "\\'") + "'"
    return '"' + body.replace('"', '\\"') + '"'


def _py_inline(value: Any) -> str:
    """A Python literal for JSON data on one line (for code shown in a README)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(str(key))}: {_py_inline(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_py_inline(item) for item in value) + "]"
    return _py(value)


def _toml(value: str) -> str:
    # A JSON string is a valid TOML basic string once control characters are escaped.
    return json.dumps(_CONTROL.sub("", str(value)), ensure_ascii=False)


def _md(value: str) -> str:
    text = _CONTROL.sub("", str(value))
    return text.replace("<", "&lt;").replace(">", "&gt;").strip()


def _docstring(value: str) -> str:
    """Text safe inside a triple-quoted docstring: no quotes or backslashes to break out."""
    text = _CONTROL.sub("", str(value)).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return text.strip()


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "package")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(py=_py, py_inline=_py_inline, toml=_toml, md=_md, docstring=_docstring, json=_json)
    return env


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def render_files(spec: EnvSpec) -> dict[str, str]:
    """Every file of the package except the lock, keyed by POSIX path relative to its root."""
    models = generate_models(spec)
    env = _environment()
    context = {
        "spec": spec,
        "header": HEADER,
        "models": models,
        "module": spec.module,
        "stem": spec.class_stem,
        "runtime_requirement": RUNTIME_REQUIREMENT,
        "verifiers_requirement": VERIFIERS_REQUIREMENT,
        "provider_kwargs": {"app": spec.defaults.app} if spec.defaults.app else {},
        "resets": [dict(r) for r in spec.defaults.resets],
        "tool_names": [t.name for t in spec.tools or ()],
        "union_members": _union_rows(spec, models),
    }
    m = spec.module
    tools = trl_tools(spec, models)
    classes = sorted({t.target for t in tools if t.target[:1].isupper() and t.target != "ANY_TOOL"}, key=str.lower)
    # The TRL module goes through ruff (as the models do): its signatures and literals come
    # from the schema, too varied to write as ruff formats them by hand. Cached as the models
    # are, so `check` starts no ruff for a package whose TRL module it has formatted before.
    trl_text = env.get_template("trl.py.j2").render(context, tools=tools, model_imports=classes)
    trl = cached_module("trl", {"trl": trl_text}, lambda: format_module(trl_text))
    files = {
        "pyproject.toml": env.get_template("pyproject.toml.j2").render(context),
        "README.md": env.get_template("README.md.j2").render(context),
        f"{m}/__init__.py": env.get_template("__init__.py.j2").render(context),
        f"{m}/taskset.py": env.get_template("taskset.py.j2").render(context),
        f"{m}/trl.py": trl,
        f"{m}/models.py": models.source,
        f"{m}/py.typed": f"{HEADER}\n",
        f"{m}/snapshot.json": render_snapshot(spec),
    }
    return files


def _union_rows(spec: EnvSpec, models: Models) -> list[dict[str, Any]]:
    """A union action's members for the README: model class, key (its tag or title), and
    fields (the base `metadata` and the discriminator left out)."""
    members = union_members(spec.action_schema) or []
    rows = []
    for cls, member in zip(models.member_classes, members, strict=True):
        required = set(member.schema.get("required") or [])
        fields = [
            f"{name}{'' if name in required else '?'}"
            for name in (member.schema.get("properties") or {})
            if name not in ("metadata", member.tag_property)  # the key already says the tag
        ]
        rows.append({"cls": cls, "key": member.key, "fields": fields})
    return rows


def render_snapshot(spec: EnvSpec) -> str:
    """The package's `snapshot.json`: the spec it was generated from, with the header."""
    # JSON has no comments: the header travels as the first key.
    body = {"_generated": HEADER_TEXT, **spec.snapshot()}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def lock_text(spec: EnvSpec, files: dict[str, str]) -> str:
    """The `openenv-gen.lock`: the spec's identity and the sha256 of every generated file."""
    lock = {
        "_generated": HEADER_TEXT,
        "format": SPEC_FORMAT,
        "package": spec.package,
        "env_id": spec.env_id,
        "schema_sha256": spec.schema_sha256,
        "files": {path: sha256_text(text) for path, text in sorted(files.items())},
    }
    return json.dumps(lock, indent=2, ensure_ascii=False) + "\n"


def render_package(spec: EnvSpec) -> dict[str, str]:
    """The whole package tree, lock included."""
    files = render_files(spec)
    files[LOCK_FILE] = lock_text(spec, files)
    return dict(sorted(files.items()))


def spec_from_snapshot(text: str) -> EnvSpec:
    """The EnvSpec a `snapshot.json` text holds (its header key dropped)."""
    data = json.loads(text)
    data.pop("_generated", None)
    return EnvSpec.model_validate(data)
