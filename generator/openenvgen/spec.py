"""The one frozen model everything downstream of a schema source consumes.

A source (catalog snapshot, live server, schema file) produces a `ServerInterface`: what
the server said, untouched. `build_spec` checks it and combines it with the env's defaults
into an `EnvSpec`. Codegen and rendering read only the `EnvSpec`; the package's
`snapshot.json` is the `EnvSpec` itself, so a package can be re-rendered from it alone.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenvgen.errors import SchemaError, UsageError
from openenvgen.schema_checks import canonical_json, checked_action, checked_object
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_schemas.normalise import union_branches, union_members

# Bumped only when the snapshot/lock layout changes; never by a release.
SPEC_FORMAT = 1

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_PACKAGE_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_ENV_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
# Bounds on what a server may hand us: real envs are far below all of them.
MAX_SCHEMA_BYTES = 2 * 1024 * 1024
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
    shown_metadata: tuple[str, ...] = ()
    """Keys of an observation's `metadata` the model reads (an env that puts the question,
    or whose turn it is, there); the rest of `metadata` stays hidden from the model."""
    seed_verdict: str | None = None
    """Whether the env honours `seed`, as `openenv-gen capture` measured it: reproducible,
    deterministic, not_reproducible or unmeasured (see openenvgen/capture/seed_check.py); None: never measured."""
    seed_evidence: str = ""
    """One line on what the verdict rests on (the measured sessions, where they differed)."""
    unlisted_tools: tuple[ToolSpec, ...] = ()
    """MCP envs: tools the env takes without listing them (agent_world_model's `verify` and
    `done`); the runtime offers them beside the listed ones."""
    executes_code: bool = False
    """The env runs code its model writes on the machine its server runs on (the catalog's
    `executes_code`, or `--executes-code`): the package refuses the UV launch unless
    `allow_host_execution` is set."""
    server_env: tuple[str, ...] = ()
    """Names of the trainer's environment variables the env's server needs (an API key):
    the package passes them to every server it launches."""

    @field_validator("server_env")
    @classmethod
    def _variable_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"server_env: {name!r} is not an environment variable name")
        return value


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

    @property
    def is_mcp_union(self) -> bool:
        """A union action with openenv's `CallToolAction` among its members (agent_world_model's
        `ListToolsAction | CallToolAction`): the runtime plays it as an MCP env."""
        return any(is_mcp_action(m.schema) for m in union_members(self.action_schema) or ())

    def snapshot(self) -> dict[str, Any]:
        # A server without `reset_observation` leaves no key, and a default of the later
        # `defaults` (no unlisted tools, no code run, no variables, no metadata shown) none
        # either, so such snapshots stay as they were.
        exclude: dict[str, Any] = {}
        if self.reset_observation_schema is None:
            exclude["reset_observation_schema"] = True
        later = ("unlisted_tools", "executes_code", "server_env", "shown_metadata")
        unset = {key for key in later if not getattr(self.defaults, key)}
        if unset:
            exclude["defaults"] = dict.fromkeys(sorted(unset), True)
        return self.model_dump(mode="json", exclude=exclude)


def validate_name(value: str) -> str:
    """`value` when it is a valid env name (a Python identifier in lowercase); else a ValueError."""
    if not _NAME_RE.match(value) or keyword.iskeyword(value):
        rule = "lowercase letters, digits and underscores, starting with a letter"
        raise ValueError(f"env name {value!r} must be {rule}")
    return value


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


def _tool(raw: Any) -> ToolSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise SchemaError("tool list entry has no string 'name'")
    # POST /mcp tools/list says inputSchema; the WebSocket list_tools step says input_schema.
    schema = raw.get("input_schema", raw.get("inputSchema", {"type": "object"}))
    checked_object(schema, f"tool {raw['name']!r} input")
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
    action = checked_action(schema.get("action"))
    observation = checked_object(schema.get("observation"), "observation")
    reset_observation = schema.get("reset_observation")
    if reset_observation is not None:
        reset_observation = checked_object(reset_observation, "reset observation")
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
