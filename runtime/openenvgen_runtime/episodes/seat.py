"""The in-process player seat: the model's side of an episode, run inside the eval process.

verifiers' `null` harness launches a `uv run` chat program for every model turn (and
relaunches it on the whole conversation each turn): about 15 CPU-seconds for a 6-step
episode. This harness makes the same model call from the eval process itself, as
`Harness.launch` allows: every call goes to the rollout's interception `endpoint` with its
bearer `secret`, streamed with usage through verifiers' own chat helper (the chat
program's retry on transport errors included), so the trace records it exactly as it
records the program's. One call per segment: the env loop (`episode`) is the user, and it
also executes any tool call the model makes. Resuming is verifiers' default `resume()`:
the accumulated conversation is relaunched, as `null` does. No program, no `uv`, no
temporary files per turn.

Failures map to what verifiers reports for its chat program: a model the interception
cannot reach fails the rollout with the interception's recorded cause; an interception
that cannot be reached at all is an `InterceptionError` (the program's exit code 97).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import verifiers.v1 as vf
from openai import APIStatusError, AsyncOpenAI
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE
from verifiers.v1.harnesses.utils.compaction import is_context_overflow
from verifiers.v1.harnesses.utils.core import chat
from verifiers.v1.runtimes import ProgramResult

# One connection pool per event loop, shared by every rollout's calls; each call binds
# its rollout's endpoint and secret with `with_options` (a cheap copy over the same pool).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = weakref.WeakKeyDictionary()


def _client(endpoint: str, secret: str) -> AsyncOpenAI:
    loop = asyncio.get_running_loop()
    root = _clients.get(loop)
    if root is None:
        import httpx

        # The chat program's timeouts: no read limit (a model may think for long), 5 s to connect.
        root = _clients[loop] = AsyncOpenAI(base_url=endpoint, api_key=secret, timeout=httpx.Timeout(None, connect=5.0))
    return root.with_options(base_url=endpoint, api_key=secret)


class InProcessHarnessConfig(vf.HarnessConfig):
    pass


class InProcessHarness(vf.Harness[InProcessHarnessConfig]):
    """A chat-only seat whose loop runs in the eval process (no program per turn)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> ProgramResult:
        system_prompt, prompt = self.resolve_prompt(data)
        # The conversation exactly as verifiers' chat program builds it.
        messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        tools = getattr(data, "action_tools", None) or []
        try:
            await chat(_client(endpoint, secret), ctx.model, messages, tools)
        except SystemExit as exit_:
            # verifiers' helper exits like its program when the transport stays down.
            cause = exit_.__cause__
            return ProgramResult(
                int(exit_.code or MODEL_TRANSPORT_ERROR_EXIT_CODE), "", f"{type(cause).__name__}: {cause}"
            )
        except APIStatusError as error:
            if is_context_overflow(error):
                # Like the program without compaction: the run ends on the transcript so far.
                return ProgramResult(0, "", "")
            # The interception stashed the real cause; the rollout reports that one.
            return ProgramResult(1, "", f"{type(error).__name__}: {error}")
        return ProgramResult(0, "", "")


def require_in_process_seat(harness: vf.HarnessConfig | None) -> None:
    """Tool-call actions need the seat that offers the action tools on every call; another
    harness would run its own tools instead. None is the package's default (this seat)."""
    if harness is None:
        return
    from verifiers.v1.utils.loaders import harness_class

    if not issubclass(harness_class(harness.id), InProcessHarness):
        raise ValueError(
            f'action_format "tools" needs the package\'s in-process seat, not harness {harness.id!r}: '
            "drop --env.player.harness.id, or use --env.taskset.action-format text"
        )
