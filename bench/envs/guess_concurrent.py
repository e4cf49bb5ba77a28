"""The guess-the-number fixture env (tests/fixtures/uv_env) with concurrent sessions.

The fixture app is single-session (openenv's default): one shared server refuses a second
session with CAPACITY_REACHED. P5 needs one server that many episodes share, so this app
serves the *same* environment class, action and observation, only marked concurrent-safe
(every session gets its own instance, so it is) and allowing `GUESS_ENV_MAX_SESSIONS`
(default 64) sessions. It runs in the fixture project's own uv environment (openenv 0.10.0):

    uv run --isolated --project tests/fixtures/uv_env -- uvicorn guess_concurrent:app --app-dir bench/envs
"""

import os

from guess_env.server import GuessAction, GuessEnvironment, GuessObservation
from openenv.core.env_server import create_app


class ConcurrentGuessEnvironment(GuessEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True


app = create_app(
    ConcurrentGuessEnvironment,
    GuessAction,
    GuessObservation,
    env_name="guess_env",
    max_concurrent_envs=int(os.environ.get("GUESS_ENV_MAX_SESSIONS", "64")),
)
