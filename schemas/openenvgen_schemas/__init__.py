"""openenvgen-schemas: what the generator (`openenvgen`) and the runtime (`openenvgen_runtime`) both
need to know about an env's schemas, so neither pulls in the other's dependencies: the interface a
server states in JSON, the schema normalisation and the model diff (`check`, `check --upstream`,
`regen`, and the runtime's drift guard at pool start). The lowest layer: it imports none of the
two (nor `openenvgen_servers`, which talks to the servers), and nothing besides the standard
library and, for the doctor's report model alone, pydantic (which both of them already need).

Layers: doctor_thresholds, interface, mcp_models, normalise, schema_types < doctor_report, changes, docstrings <
    compatibility < modeldiff
(each module imports only modules of layers left of its own)

- `doctor_thresholds`: `Thresholds`, what the doctor's verdicts are judged by (read by the
  CLI without the report's models).
- `doctor_report`: `DoctorReport`, the versioned JSON document `openenv-gen doctor` reports
  (the runtime measures and writes it; the generator renders it).
- `interface`: a `/schema` reply's interface parts and a `tools/list` reply's tools, read
  from strict JSON (no NaN or Infinity).
- `mcp_models`: the one copy of OpenEnv's MCP models' schemas (the runtime's shared models).
- `normalise`: the normalisation under which two schemas are equal (and a union's members).
- `schema_types`: what a JSON schema lets through (its JSON types, listed values, union branches).
- `changes`: a diff's result, each `Change` with a path and a semver impact, and `bump`.
- `docstrings`: a tool's docstring read as FastMCP renders it (summary, documented arguments).
- `compatibility`: `diff_schemas`, whether a JSON schema's change breaks its inputs' senders
  or its outputs' readers.
- `modeldiff`: the diff of two specs or two live interfaces (`diff_specs`, `is_mcp_action`).
"""
