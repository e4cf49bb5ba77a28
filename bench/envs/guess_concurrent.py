"""The guess-the-number fixture env (tests/fixtures/uv_env) with concurrent sessions.

The fixture app is single-session (openenv's default): one shared server refuses a second
session with CAPACITY_REACHED. P5 needs one server that many episodes share, so this app
serves the *same* environment class, action and observation, only marked concurrent-safe
(every session gets its own instance, so it is) and allowing `GUESS_ENV_MAX_SESSIONS`
(default 64) sessions. It runs in the fixture project's own uv environment (openenv 0.10.0):

    uv run --isolated --project tests/fixtures/uv_env -- uvicorn guess_concurrent:app --app-dir bench/envs

`GET /bench/resets` counts the episodes this server process has begun (its resets), so a
benchmark can tell which server of a fleet took which episodes, and that a restarted one
takes new ones.
"""

import os

from guess_env.server import GuessAction, GuessEnvironment, GuessObservation
from openenv.core.env_server import create_app

RESETS = 0


class ConcurrentGuessEnvironment(GuessEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def reset(self, seed=None, episode_id=None, **kwargs) -> GuessObservation:
        global RESETS
        RESETS += 1
        return super().reset(seed=seed, episode_id=episode_id, **kwargs)


app = create_app(
    ConcurrentGuessEnvironment,
    GuessAction,
    GuessObservation,
    env_name="guess_env",
    max_concurrent_envs=int(os.environ.get("GUESS_ENV_MAX_SESSIONS", "64")),
)


@app.get("/bench/resets")
def resets() -> dict[str, int]:
    return {"resets": RESETS, "pid": os.getpid()}
