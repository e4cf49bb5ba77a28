"""The doctor's policy: schema-valid actions for a package's env, drawn at random.

Each episode opens with the catalog's example action (the package snapshot's
`defaults.example_action`), when there is one; every later action is either a variation of it
(one field drawn anew) or an action drawn whole from the action schema (for MCP envs: a
listed tool, its arguments drawn from the tool's argument model). Every candidate goes through
the package's `ActionSpace.parse`, exactly as a model's reply would, so only actions that the
package's models accept are ever sent; a candidate they refuse is dropped and another drawn.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from openenvgen_runtime.doctor.instances import Unsupported, draw
from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction

ATTEMPTS = 64
"""Candidates drawn for one action before the policy gives up (`NoValidAction`)."""


class NoValidAction(RuntimeError):
    """No candidate the package's models accept could be drawn."""


@dataclass
class Policy:
    space: ActionSpace
    example: Any = None
    """The catalog's example action, as the model would write it (None: none known)."""

    def first(self, rng: random.Random) -> dict[str, Any]:
        """An episode's opening action: the example when it is valid, else a drawn one."""
        if self.example is not None:
            try:
                return self.space.parse(json.dumps(self.example))
            except InvalidAction:
                pass
        return self.next(rng)

    def next(self, rng: random.Random) -> dict[str, Any]:
        """A drawn action the package's models accept, as the server takes it."""
        last = "no candidate"
        for _ in range(ATTEMPTS):
            try:
                candidate = self._candidate(rng)
                return self.space.parse(json.dumps(candidate))
            except (Unsupported, InvalidAction, TypeError, ValueError) as e:
                last = str(e)
        raise NoValidAction(f"no valid action drawn in {ATTEMPTS} tries (last: {last})")

    def _candidate(self, rng: random.Random) -> Any:
        if self.space.is_mcp:
            arguments = self.space.tool_arguments or {}
            if not arguments:
                raise Unsupported("no tools")
            if isinstance(self.example, dict) and rng.random() < 0.3:
                return self.example
            name = rng.choice(sorted(arguments))
            return {"tool": name, "arguments": draw(arguments[name].model_json_schema(), rng)}
        schema = self.space.action_model.model_json_schema()
        if isinstance(self.example, dict) and self.example and rng.random() < 0.5:
            return self._variation(self.example, schema, rng)
        return draw(schema, rng)

    @staticmethod
    def _variation(example: dict[str, Any], schema: dict[str, Any], rng: random.Random) -> Any:
        """The example with one of its fields drawn anew from that field's schema."""
        properties = schema.get("properties") or {}
        fields = [name for name in example if name in properties]
        if not fields:
            return draw(schema, rng)
        name = rng.choice(fields)
        defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
        return {**example, name: draw(properties[name], rng, defs=defs)}
