"""What `serve` accepts: a spec naming the env and its config, turned into an openenv-core app."""

import functools
import importlib.util
from pathlib import Path
from typing import Any

from .text_env import ConfigError, TextAction, TextObservation

SPECS_HELP = (
    "gymnasium:FrozenLake-v1 (Gymnasium's FrozenLake on starpo's maps), "
    "reasoning_gym:<dataset> (e.g. reasoning_gym:basic_arithmetic), "
    "python:<file.py> (a file whose `app` is an openenv-core app, made with create_app)"
)
GYMNASIUM_IDS = ("FrozenLake-v1",)


def _file_app(path: str) -> Any:
    file = Path(path)
    if file.suffix != ".py" or not file.is_file():
        raise ConfigError(f"spec python:{path}: no such .py file; allowed: {SPECS_HELP}")
    module_spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    app = getattr(module, "app", None)
    if app is None:
        raise ConfigError(f"spec python:{path}: the file defines no `app` (openenv.core.env_server.create_app(...))")
    return app


def make_app(spec: str, config: dict[str, Any], max_sessions: int) -> Any:
    """The app serving `spec`, with up to `max_sessions` WebSocket sessions at once (one per episode).
    @raises ConfigError naming the spec or the config key, the value and what is allowed"""
    kind, _, name = spec.partition(":")
    if kind == "python":
        if config:
            raise ConfigError(f"spec {spec}: --config is for the bridge's envs; a python: file configures itself")
        return _file_app(name)
    # Imported here: each family loads only its own library (reasoning-gym takes seconds to import).
    from openenv.core.env_server import create_app

    if kind == "gymnasium" and name in GYMNASIUM_IDS:
        from . import frozen_lake

        factory = functools.partial(frozen_lake.FrozenLakeEnv, name, frozen_lake.parse_config(name, config))
    elif kind == "reasoning_gym" and name != "":
        from . import reasoning

        factory = functools.partial(reasoning.ReasoningGymEnv, name, reasoning.parse_config(name, config))
    else:
        raise ConfigError(f"unknown spec {spec!r}; allowed: {SPECS_HELP}")
    return create_app(factory, TextAction, TextObservation, env_name=spec, max_concurrent_envs=max_sessions)
