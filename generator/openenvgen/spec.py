"""The one frozen model everything downstream of a schema source consumes.

A source (catalog snapshot, live server, schema file) produces a `ServerInterface`: what
the server said, untouched. `build_spec` checks it and combines it with the env's defaults
into an `EnvSpec`. Codegen and rendering read only the `EnvSpec`; the package's
`snapshot.json` is the `EnvSpec` itself, so a package can be re-rendered from it alone.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import re
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenvgen.errors import SchemaError, UsageError
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_schemas.normalise import UNION_KEYS, discriminator_property, normalise, tag_value, union_branches

# Bumped only when the snapshot/lock layout changes; never by a release.
SPEC_FORMAT = 1

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_PACKAGE_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_ENV_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
# Bounds on what a server may hand us: real envs are far below all of them.
MAX_SCHEMA_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 32
MAX_PROPERTIES = 1000
MAX_TOOLS = 256
MAX_METADATA_CHARS = 4000
# verifiers resolves these ids to its own tasksets before any installed package.
VERIFIERS_BUILTIN_IDS = frozenset({"openenv", "textarena", "harbor", "nemo_gym", "lean"})


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolSpec(Frozen):
    """One MCP tool as the server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class EnvMetadata(Frozen):
    """The parts of `/metadata` a package shows; everything else is dropped."""

    name: str = ""
    description: str = ""
    version: str = ""
    author: str = ""
    documentation_url: str = ""


class EnvDefaults(Frozen):
    """Env-specific defaults the generated taskset carries (from the catalog or flags)."""

    app: str | None = None
    """ASGI app path the UV provider serves, e.g. `textarena_env.server.app:app`."""
    resets: tuple[dict[str, Any], ...] = ({},)
    """Reset kwargs, one task each."""
    action_hint: str = ""
    """One or two sentences for the system prompt on how to phrase an action."""
    example_action: dict[str, Any] | None = None
    """A valid action shown in the package README."""
    seed_verdict: str | None = None
    """Whether the env honours `seed`, as `openenv-gen capture` measured it: reproducible,
    deterministic, not_reproducible or unmeasured (see openenvgen/catalog/seed_check.py); None: never measured."""
    seed_evidence: str = ""
    """One line on what the verdict rests on (the measured sessions, where they differed)."""


class EnvSpec(Frozen):
    """Everything needed to render one adapter package."""

    format: int = SPEC_FORMAT
    name: str
    """Short name, e.g. `wordle`; also the stem of the package name."""
    env_id: str
    """OpenEnv env id (Hugging Face Space id), e.g. `openenv/wordle`."""
    package: str
    """Distribution name, e.g. `wordle-openenv`; verifiers loads it by this id."""
    package_version: str = "0.1.0"
    """The generated package's version; `regen` bumps it by the impact of a schema change."""
    metadata: EnvMetadata
    action_schema: dict[str, Any]
    """One object schema, or a `oneOf`/`anyOf` of object schemas (a union action)."""
    observation_schema: dict[str, Any]
    reset_observation_schema: dict[str, Any] | None = None
    """What `reset` returns, when `/schema` says (`reset_observation`, openenv ≥ 0.10);
    None when the server does not, i.e. reset returns a step observation."""
    tools: tuple[ToolSpec, ...] | None = None
    """The MCP tool list; None for an env with a typed action."""
    defaults: EnvDefaults = EnvDefaults()

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return validate_name(value)

    @property
    def is_mcp(self) -> bool:
        return self.tools is not None

    @property
    def module(self) -> str:
        """Import package name: verifiers lowercases the id and maps dashes to underscores."""
        return self.package.replace("-", "_").lower()

    @property
    def class_stem(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_") if part)

    @property
    def schema_sha256(self) -> str:
        return schema_digest(self.action_schema, self.observation_schema, self.tools, self.reset_observation_schema)

    @property
    def is_union(self) -> bool:
        return union_branches(self.action_schema) is not None

    def snapshot(self) -> dict[str, Any]:
        # A server without `reset_observation` leaves no key, so such snapshots stay as they were.
        exclude = {"reset_observation_schema"} if self.reset_observation_schema is None else set()
        return self.model_dump(mode="json", exclude=exclude)


def validate_name(value: str) -> str:
    """`value` when it is a valid env name (a Python identifier in lowercase); else a ValueError."""
    if not _NAME_RE.match(value) or keyword.iskeyword(value):
        rule = "lowercase letters, digits and underscores, starting with a letter"
        raise ValueError(f"env name {value!r} must be {rule}")
    return value


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_digest(
    action: dict[str, Any],
    observation: dict[str, Any],
    tools: tuple[ToolSpec, ...] | None,
    reset_observation: dict[str, Any] | None = None,
) -> str:
    payload = {
        "action": action,
        "observation": observation,
        "tools": None if tools is None else [t.model_dump(mode="json") for t in tools],
    }
    if reset_observation is not None:
        payload["reset_observation"] = reset_observation
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def default_package_name(name: str) -> str:
    """`<name>-openenv`: never `openenv-*` (OpenEnv's AutoEnv would claim it) nor a verifiers built-in id."""
    return f"{name.replace('_', '-')}-openenv"


class ServerInterface(Frozen, populate_by_name=True):
    """What a server said, unchecked: `/schema`, `/metadata`, tool list (a catalog snapshot keeps one)."""

    schema_: dict[str, Any] = Field(alias="schema")
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: tuple[dict[str, Any], ...] | None = None


def _checked_object(schema: Any, what: str) -> dict[str, Any]:
    """An object schema within the bounds, its `$ref`s all local and resolved."""
    if not isinstance(schema, dict):
        raise SchemaError(f"{what} schema is not a JSON object")
    if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        raise SchemaError(f"{what} schema is not an object schema with properties")
    _check_bounds(schema, what)
    _check_refs(schema, what)
    return schema


def _checked_action(schema: Any) -> dict[str, Any]:
    """One object schema, or a union of object schemas (see `_check_union`), within the bounds."""
    if not isinstance(schema, dict):
        raise SchemaError("action schema is not a JSON object")
    # Bounds and refs first: the union checks walk the schema.
    _check_bounds(schema, "action")
    _check_refs(schema, "action")
    if union_branches(schema) is not None:
        _check_union(schema)
    elif schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        raise SchemaError("action schema is not an object schema with properties, nor a oneOf/anyOf of object schemas")
    return schema


def _resolve_member(branch: Any, defs: dict[str, Any], index: int, trail: tuple[str, ...] = ()) -> dict[str, Any]:
    """A union member with its `$ref` chain followed; a chain that comes back to a name it
    passed, directly or through a nested union, is a cycle."""
    node = branch
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in trail:
            raise SchemaError(f"action union member {index} is a $ref cycle: {' → '.join((*trail, name))}")
        if name not in defs:
            raise SchemaError(f"action schema has an unresolved $ref {node['$ref'][:80]!r}")
        trail = (*trail, name)
        node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
    nested = union_branches(node)
    if nested is not None:
        for sub in nested:
            _resolve_member(sub, defs, index, trail)
        raise SchemaError(f"action union member {index} is itself a union; list its members in the action's oneOf")
    if not isinstance(node, dict) or node.get("type") != "object" or not isinstance(node.get("properties", {}), dict):
        kind = node.get("type") if isinstance(node, dict) else type(node).__name__
        raise SchemaError(
            f"action union member {index} is not an object schema (type {str(kind)[:40]!r}); a union action must be a oneOf/anyOf of objects"
        )
    return node


def _check_union(schema: dict[str, Any]) -> None:
    """A union action: every member an object schema, no two members alike (by title, by
    tag or by shape), and a `discriminator`, when named, fixed by every member."""
    keyword_used = next(k for k in UNION_KEYS if isinstance(schema.get(k), list))
    branches = schema[keyword_used]
    if not branches:
        raise SchemaError(f"action schema's {keyword_used} has no members")
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    members = [_resolve_member(b, defs, i) for i, b in enumerate(branches, 1)]
    titles: dict[str, int] = {}
    shapes: dict[str, int] = {}
    for i, member in enumerate(members, 1):
        title = member.get("title")
        if isinstance(title, str):
            if title in titles:
                raise SchemaError(
                    f"action union members {titles[title]} and {i} collide: both are titled {title[:60]!r}"
                )
            titles[title] = i
        try:
            shape = canonical_json(normalise({**member, "$defs": defs}))
        except ValueError as e:
            raise SchemaError(f"action union member {i}: {e}") from None
        if shape in shapes:
            raise SchemaError(f"action union members {shapes[shape]} and {i} collide: they accept the same actions")
        shapes[shape] = i
    discriminator = schema.get("discriminator")
    if discriminator is None:
        if keyword_used == "oneOf" and discriminator_property({}, members) is None:
            # A oneOf refuses a value two members accept; the generated union cannot.
            raise SchemaError(
                "action schema's oneOf has no discriminator and no property whose const tells its members apart, "
                "so its members may overlap"
            )
        return
    name = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    if not isinstance(name, str):
        raise SchemaError("action schema's discriminator has no string propertyName")
    tags: dict[str, int] = {}
    for i, member in enumerate(members, 1):
        prop = (member.get("properties") or {}).get(name)
        label = f"member {i}" + (f" ({member['title'][:40]})" if isinstance(member.get("title"), str) else "")
        if prop is None:
            raise SchemaError(
                f"action schema's discriminator names {name[:40]!r}, a property union {label} does not have"
            )
        value = tag_value(prop)
        if value is None:
            raise SchemaError(f"action schema's discriminator {name[:40]!r} is not fixed to one value in union {label}")
        tag = canonical_json(value)
        if tag in tags:
            raise SchemaError(f"action union members {tags[tag]} and {i} collide: both have {name[:40]} = {tag[:40]}")
        tags[tag] = i
    mapping = discriminator.get("mapping") or {}
    if not isinstance(mapping, dict) or any(
        not isinstance(ref, str) or ref.rsplit("/", 1)[-1] not in defs for ref in mapping.values()
    ):
        raise SchemaError("action schema's discriminator mapping names a schema that is not in its $defs")


def _check_refs(schema: dict[str, Any], what: str) -> None:
    """Every `$ref` must be local and resolve: a dangling one would silently become `Any`."""
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None:
                if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
                    raise SchemaError(f"{what} schema has a non-local $ref {str(ref)[:80]!r}")
                if ref.rsplit("/", 1)[-1] not in defs:
                    raise SchemaError(f"{what} schema has an unresolved $ref {ref[:80]!r}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def _check_bounds(node: Any, what: str) -> None:
    """Refuse schemas too deep or too wide to be a real env's (and too costly to generate)."""
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"{what} schema is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            props = value.get("properties")
            if isinstance(props, dict):
                if len(props) > MAX_PROPERTIES:
                    raise SchemaError(
                        f"{what} schema has {len(props)} properties in one object (limit {MAX_PROPERTIES})"
                    )
                for prop in props:
                    # Python NFKC-normalises identifiers: a field named "𝐀" would silently
                    # become "A" and no longer accept the server's key.
                    if unicodedata.normalize("NFKC", prop) != prop:
                        raise SchemaError(f"{what} schema property {prop[:40]!r} changes under Unicode normalisation")
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _tool(raw: Any) -> ToolSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise SchemaError("tool list entry has no string 'name'")
    # POST /mcp tools/list says inputSchema; the WebSocket list_tools step says input_schema.
    schema = raw.get("input_schema", raw.get("inputSchema", {"type": "object"}))
    _checked_object(schema, f"tool {raw['name']!r} input")
    description = raw.get("description") or ""
    if not isinstance(description, str):
        raise SchemaError(f"tool {raw['name']!r} description is not a string")
    return ToolSpec(name=raw["name"], description=description, input_schema=schema)


def _metadata(raw: dict[str, Any]) -> EnvMetadata:
    def text(key: str) -> str:
        value = raw.get(key)
        # Untrusted and shown in READMEs and package metadata: strings only, bounded.
        return value[:MAX_METADATA_CHARS] if isinstance(value, str) else ""

    return EnvMetadata(**{key: text(key) for key in EnvMetadata.model_fields})


def build_spec(
    interface: ServerInterface,
    *,
    name: str,
    env_id: str,
    package: str | None = None,
    defaults: EnvDefaults | None = None,
) -> EnvSpec:
    """Check a server interface and combine it with the env's defaults into the frozen spec."""
    try:
        validate_name(name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if env_id is not None and not _ENV_ID_RE.match(env_id):
        raise UsageError(f"env id {env_id[:100]!r} must look like owner/name (letters, digits, . _ -)")
    schema = interface.schema_
    size = len(canonical_json({"schema": schema, "tools": interface.tools}).encode())
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(f"schema and tool list are {size} bytes (limit {MAX_SCHEMA_BYTES})")
    action = _checked_action(schema.get("action"))
    observation = _checked_object(schema.get("observation"), "observation")
    reset_observation = schema.get("reset_observation")
    if reset_observation is not None:
        reset_observation = _checked_object(reset_observation, "reset observation")
    tools: tuple[ToolSpec, ...] | None = None
    if is_mcp_action(action):
        if interface.tools is None:
            raise SchemaError("MCP env (action type 'call_tool') but no tool list was captured")
        tools = tuple(_tool(t) for t in interface.tools)
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise SchemaError("tool list names the same tool twice")
        if len(tools) > MAX_TOOLS:
            raise SchemaError(f"tool list has {len(tools)} tools (limit {MAX_TOOLS})")
    package = package or default_package_name(name)
    if not _PACKAGE_RE.match(package) or len(package) > 100:
        raise UsageError(f"package name {package[:100]!r} must be lowercase letters and digits separated by dashes")
    module = package.replace("-", "_").lower()
    if package.lower().startswith("openenv-") or module in VERIFIERS_BUILTIN_IDS:
        why = "openenv-* is claimed by OpenEnv's AutoEnv; verifiers' built-in ids shadow packages"
        raise UsageError(f"package name {package!r} is reserved ({why})")
    try:
        return EnvSpec(
            name=name,
            env_id=env_id,
            package=package,
            metadata=_metadata(interface.metadata),
            action_schema=action,
            observation_schema=observation,
            reset_observation_schema=reset_observation,
            tools=tools,
            defaults=defaults or EnvDefaults(),
        )
    except ValidationError as e:
        raise SchemaError(f"invalid spec: {e.errors()[0]['msg']}") from None
