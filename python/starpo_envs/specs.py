"""What the bridge serves: a spec naming the env, and its config, turned into an openenv-core app."""

import functools
import re
from typing import Any

from .text_env import ConfigError, TextAction, TextObservation

SPECS_HELP = (
    "gymnasium:FrozenLake-v1 (Gymnasium's FrozenLake on starpo's maps), "
    "reasoning_gym:<dataset> (e.g. reasoning_gym:basic_arithmetic), "
    "gem:<GEM env id> (e.g. gem:game:GuessTheNumber-v0-easy), "
    "<module or file.py>:<Class> (a text env class of your own, docs/envs.md \"Your env in Python\")"
)
GYMNASIUM_IDS = ("FrozenLake-v1",)
USER_SPEC = re.compile(r"^(?P<module>[^:]+):(?P<cls>[A-Za-z_][A-Za-z0-9_]*)$")


def make_app(spec: str, config: dict[str, Any], max_sessions: int) -> Any:
    """The app serving `spec`, with up to `max_sessions` WebSocket sessions (episodes) at once.
    @raises ConfigError naming the spec or the config key, the value and what is allowed"""
    kind, _, name = spec.partition(":")
    observation_cls = TextObservation
    # Imported here: each family loads only its own library (reasoning-gym takes seconds to import).
    if kind == "gymnasium":
        if name not in GYMNASIUM_IDS:
            raise ConfigError(f"spec {spec!r}: the bridge serves Gymnasium's {', '.join(GYMNASIUM_IDS)}; allowed: {SPECS_HELP}")
        from . import frozen_lake

        factory = functools.partial(frozen_lake.FrozenLakeEnv, name, frozen_lake.parse_config(name, config))
        observation_cls = frozen_lake.LakeObservation
    elif kind == "reasoning_gym":
        from . import reasoning

        factory = functools.partial(reasoning.ReasoningGymEnv, name, reasoning.parse_config(name, config))
    elif kind == "gem":
        from . import gem_env

        factory = functools.partial(gem_env.GemEnv, name, gem_env.parse_config(name, config))
    elif (m := USER_SPEC.match(spec)) is not None:
        from . import user_env

        cls = user_env.load_class(m["module"], m["cls"])
        try:
            cls(**config)  # a bad config fails when the server starts, not at the first episode
        except TypeError as err:
            raise ConfigError(f"spec {spec}: --config {config!r} does not fit {m['cls']}(...): {err}") from err
        factory = functools.partial(user_env.UserEnv, cls, config)
    else:
        raise ConfigError(f"unknown spec {spec!r}; allowed: {SPECS_HELP}")
    from openenv.core.env_server import create_fastapi_app

    return create_fastapi_app(factory, TextAction, observation_cls, max_concurrent_envs=max_sessions)
