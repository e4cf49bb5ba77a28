"""Typed Pydantic models from the spec's JSON schemas, through datamodel-code-generator.

One module holds the action model (a union action: a RootModel over its members' models),
for MCP envs one argument model per tool, the step observation's model and, when the
server serves `reset_observation`, the reset observation's (an alias of the step
observation's when the two schemas are the same after normalisation). A model whose
definition is exactly one of OpenEnv's shared MCP models' (`openenvgen_schemas.mcp_models`;
the models it refers to too) is imported from the runtime's `openenvgen_runtime.mcp_models`
instead of generated again. The
options are chosen so the models validate exactly like the server's own: a property
that is optional but has no `default` in the schema (a server-side `default_factory`)
becomes `T | MISSING` rather than `T | None`, so `null` is refused as the server refuses
it and the model's JSON schema keeps no invented default.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import keyword
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenvgen.errors import SchemaError
from openenvgen.generation import shared_models
from openenvgen.generation.layout import HEADER as HEADER
from openenvgen.generation.layout import HEADER_TEXT as HEADER_TEXT
from openenvgen.generation.layout import cache_dir as _cache_dir
from openenvgen.generation.layout import touch, write_cache_entry
from openenvgen.generation.python_format import FORMAT_SETTINGS as FORMAT_SETTINGS
from openenvgen.generation.python_format import format_module
from openenvgen.schema_checks import canonical_json
from openenvgen.spec import SPEC_FORMAT, EnvSpec
from openenvgen_schemas import mcp_models
from openenvgen_schemas.normalise import normalise

# A server's title is kept as the class name only when it already is a plain CamelCase
# class name (codegen would rewrite anything else, e.g. dunders or lowercase names).
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{0,99}$")


@dataclass(frozen=True)
class Models:
    source: str
    """The module text."""
    action_class: str
    tool_classes: dict[str, str]
    """Tool name → argument model class name (empty for a typed-action env)."""
    member_classes: tuple[str, ...] = ()
    """A union action: its members' model classes, in the union's order (empty otherwise)."""
    observation_class: str = ""
    """The step observation's model class."""
    reset_observation_class: str | None = None
    """The reset observation's model class (or alias); None when the server serves none."""
    reset_is_step_observation: bool = False
    """The reset observation's schema is the step observation's: its name is an alias."""
    shared_classes: tuple[str, ...] = ()
    """Classes imported from the runtime's shared MCP models (`openenvgen_schemas.mcp_models.MODULE`),
    not generated: each one's definition here is the shared one, exactly."""


def camel(text: str) -> str:
    words = re.split(r"[^A-Za-z0-9]+", text)
    out = "".join(w[:1].upper() + w[1:] for w in words if w)
    if not out or not out[0].isalpha():
        out = "T" + out
    return out


def _class_name(preferred: Any, fallback: str, taken: set[str]) -> str:
    name = preferred if isinstance(preferred, str) and _CLASS_NAME.match(preferred) else fallback
    if keyword.iskeyword(name) or name in {"BaseModel", "Field", "ConfigDict", "MISSING"}:
        name = fallback
    base, n = name, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _rewrite_refs(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                target = value.removeprefix("#/$defs/")
                out[key] = f"#/$defs/{renames.get(target, target)}"
            elif key == "mapping" and isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
                # A discriminator's mapping names `$defs` entries too.
                out[key] = {tag: _rewrite_refs({"$ref": ref}, renames)["$ref"] for tag, ref in value.items()}
            else:
                out[key] = _rewrite_refs(value, renames)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, renames) for v in node]
    return node


def _hoist(schema: dict[str, Any], defs: dict[str, Any], taken: set[str]) -> dict[str, Any]:
    """Move `schema`'s own `$defs` into the shared `defs`, renaming on collision."""
    schema = copy.deepcopy(schema)
    local = schema.pop("$defs", None) or {}
    if not isinstance(local, dict):
        raise SchemaError("$defs is not an object")
    renames = {name: _class_name(name, camel(name), taken) for name in local}
    for name, sub in local.items():
        defs[renames[name]] = _rewrite_refs(sub, renames)
    rewritten: dict[str, Any] = _rewrite_refs(schema, renames)  # a dict stays a dict
    return rewritten


def hoist_union_members(root: dict[str, Any], defs: dict[str, Any], taken: set[str], stem: str) -> tuple[str, ...]:
    """A union root's members as classes: each member written in place (not a `$ref`) moves
    into `defs` under its title (or `<Stem>Action<i>`), so every member is a named model."""
    key = next((k for k in ("oneOf", "anyOf") if isinstance(root.get(k), list)), None)
    if key is None:
        return ()
    classes = []
    branches = []
    for i, branch in enumerate(root[key], 1):
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(branch) == 1:
            classes.append(ref.removeprefix("#/$defs/"))
            branches.append(branch)
            continue
        cls = _class_name(branch.get("title"), f"{stem}Action{i}", taken)
        defs[cls] = {**branch, "title": cls}
        classes.append(cls)
        branches.append({"$ref": f"#/$defs/{cls}"})
    root[key] = branches
    return tuple(classes)


def combined_schema(spec: EnvSpec) -> tuple[dict[str, Any], str, dict[str, str]]:
    """One JSON schema whose root is the action and whose `$defs` hold every other model."""
    root, models = _combined(spec)
    return root, models.action_class, models.tool_classes


def observation_class(spec: EnvSpec) -> str:
    """The class name of `spec`'s generated step observation model (no code generated)."""
    return _combined(spec)[1].observation_class


def _combined(spec: EnvSpec) -> tuple[dict[str, Any], Models]:
    """The combined schema, and the class names (a `Models` without its source yet)."""
    taken: set[str] = set()
    defs: dict[str, Any] = {}
    action_class = _class_name(spec.action_schema.get("title"), f"{spec.class_stem}Action", taken)
    root = _hoist(spec.action_schema, defs, taken)
    root["title"] = action_class
    members = hoist_union_members(root, defs, taken, spec.class_stem)
    tool_classes: dict[str, str] = {}
    for tool in spec.tools or ():
        cls = _class_name(None, f"{camel(tool.name)}Arguments", taken)
        tool_classes[tool.name] = cls
        schema = _hoist(tool.input_schema, defs, taken)
        schema["title"] = cls
        defs[cls] = schema
    observation_title = spec.observation_schema.get("title")
    observation_class = _class_name(observation_title, f"{spec.class_stem}Observation", taken)
    observation = _hoist(spec.observation_schema, defs, taken)
    defs[observation_class] = {**observation, "title": observation_class}
    reset_class = None
    reset = spec.reset_observation_schema
    same = reset is not None and normalise(reset) == normalise(spec.observation_schema)
    if reset is not None:
        # Named by its own title when that differs from the step observation's.
        title = reset.get("title")
        own_title = title if title != observation_title else None
        reset_class = _class_name(own_title, f"{spec.class_stem}ResetObservation", taken)
        if not same:
            defs[reset_class] = {**_hoist(reset, defs, taken), "title": reset_class}
    if defs:
        root["$defs"] = defs
    return root, Models(
        source="",
        action_class=action_class,
        tool_classes=tool_classes,
        member_classes=members,
        observation_class=observation_class,
        reset_observation_class=reset_class,
        reset_is_step_observation=same,
        shared_classes=shared_models.shared_classes(root, action_class),
    )


# The options below, as data: part of the cache key, so changing one invalidates the cache.
CODEGEN_OPTIONS: dict[str, Any] = {
    "custom_file_header": HEADER,
    "disable_timestamp": True,
    "use_annotated": False,
    # Constraints go in Field(ge=0, ...) on a plain `int`: mypy reads `conint(ge=0)` as Any.
    "field_constraints": True,
    "use_schema_description": True,
    "use_field_description": False,
    "use_double_quotes": True,
    "keep_model_order": True,
    # Optional-without-default fields become `T | MISSING`, never `T | None`.
    "strict_nullable": True,
    "use_missing_sentinel": True,
    "enum_field_as_literal": "one",
    "collapse_root_models": True,
}


@functools.cache
def _key_settings() -> dict[str, Any]:
    """What a cache key holds besides a module's inputs, read once a process: the options,
    the tools' versions and the format settings."""
    # datamodel-code-generator's version is read from its metadata: importing it costs
    # a third of a second, which is what the cache saves.
    tools = {}
    for tool in ("datamodel-code-generator", "ruff"):  # the generator and the formatter
        try:
            tools[tool] = importlib.metadata.version(tool)
        except importlib.metadata.PackageNotFoundError:
            tools[tool] = "?"
    formatting = (FORMAT_SETTINGS / "pyproject.toml").read_text("utf-8")
    return {"options": CODEGEN_OPTIONS, "tools": tools, "formatting": formatting, "format": SPEC_FORMAT}


def _cache_key(inputs: dict[str, Any]) -> str:
    text = canonical_json({"schema": inputs, **_key_settings()})
    return hashlib.sha256(text.encode()).hexdigest()


def cached_module(folder: str, inputs: dict[str, Any], make: Callable[[], str]) -> str:
    """The module `make()` returns, from the content-addressed cache (its `folder`) when one
    was made before from these `inputs` with these options, tools and format settings."""
    cache = _cache_dir()
    if cache is None:
        return make()
    # The key reads installed distributions' metadata: computed only for a cache.
    cached = cache / folder / f"{_cache_key(inputs)}.py"
    try:
        source = cached.read_text("utf-8")
    except OSError:  # not cached yet, or just trimmed by another run
        source = ""
    if source.startswith(HEADER):
        touch(cached)
    else:
        source = make()
        write_cache_entry(cached, source)
    return source


def generate_models(spec: EnvSpec) -> Models:
    """The models module for `spec`: from the content-addressed cache when this exact
    schema was generated before with these options and this datamodel-code-generator."""
    root, names = _combined(spec)
    reset_alias = names.reset_observation_class if names.reset_is_step_observation else None
    inputs = {"root": root, "reset_alias": reset_alias, "shared": names.shared_classes}
    return dataclasses.replace(names, source=cached_module("", inputs, lambda: _generate(root, names)))


def _generate(root: dict[str, Any], names: Models) -> str:
    """The formatted models module, generated by datamodel-code-generator and ruff."""
    source = _codegen(root, HEADER, names.shared_classes)
    defined = set(re.findall(r"^class (\w+)\(", source, flags=re.M)) | set(names.shared_classes)
    reset = names.reset_observation_class
    wanted = {names.action_class, names.observation_class, *names.tool_classes.values(), *names.member_classes}
    if reset is not None and not names.reset_is_step_observation:
        wanted.add(reset)
    missing = wanted - defined
    if missing:
        raise SchemaError(f"model generation dropped {sorted(missing)}")
    source = source.rstrip() + "\n"
    if reset is not None and names.reset_is_step_observation:
        source += "\n\n# The server's reset observation has the step observation's schema.\n"
        source += f"{reset} = {names.observation_class}\n"
    if names.shared_classes:
        source = shared_models.import_shared(source, names.shared_classes)
    return format_module(source)


_SHARED_DOCSTRING = '''"""OpenEnv's MCP models, which a generated package imports rather than generating them again.

Generated by openenv-gen (`codegen.shared_models_source`) from their schemas' one copy,
`openenvgen_schemas/mcp_models.json`; a package imports a class from here only when its
server's definition of it is that copy's, exactly.
"""'''


def shared_models_source(settings_path: Path = FORMAT_SETTINGS) -> str:
    """The runtime's `openenvgen_runtime.mcp_models`: the shared MCP models generated from
    their schema copy with every package's options, formatted by the ruff settings nearest
    `settings_path` (the runtime's module is formatted as the repository's code is)."""
    defs = mcp_models.definitions()
    first = next(iter(defs))
    root = {**defs.pop(first), "$defs": defs}
    return format_module(_codegen(root, f"{HEADER}\n{_SHARED_DOCSTRING}", ()), settings_path).rstrip() + "\n"


def _codegen(root: dict[str, Any], header: str, shared: tuple[str, ...]) -> str:
    """datamodel-code-generator's module for `root`, unformatted (`python_format` formats the
    module openenv-gen makes of it, once); the `shared` classes are left out."""
    # Imported here: the CLI's other commands should not pay for it.
    from datamodel_code_generator import GenerateConfig, InputFileType, PythonVersion, generate
    from datamodel_code_generator.enums import DataModelType  # used by name, but left out of the package's __all__

    config = GenerateConfig(
        input_file_type=InputFileType.JsonSchema,
        output_model_type=DataModelType.PydanticV2BaseModel,
        target_python_version=PythonVersion.PY_311,
        formatters=[],
        # A shared class is not generated; a model referring to it imports it.
        type_overrides={name: f"{mcp_models.MODULE}.{name}" for name in shared} or None,
        **{**CODEGEN_OPTIONS, "custom_file_header": header},
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = generate(json.dumps(root, sort_keys=False), config=config)
    except Exception as e:  # datamodel-code-generator raises many types on bad schemas
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SchemaError(f"cannot generate models from the schemas: {first}") from None
    assert isinstance(source, str)
    # pydantic 2.14 made the sentinel public (the experimental path now warns on import);
    # ruff's isort merges it into the module's `from pydantic import`.
    return source.replace(_EXPERIMENTAL_MISSING, "from pydantic import MISSING")


_EXPERIMENTAL_MISSING = "from pydantic.experimental.missing_sentinel import MISSING"
