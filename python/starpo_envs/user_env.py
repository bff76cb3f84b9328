"""A text env of your own as a class (spec `<module or file.py>:<Class>`, docs/envs.md "Your env in Python"),
served without writing any openenv-core code. The class is made once per session (episode) as Class(**config)
and plays Gymnasium's way, with text for observations and actions:

    reset(seed=seed) -> text, or (text, info)
    step(answer)     -> (text, reward, done, info), or Gymnasium's (text, reward, terminated, truncated, info)

`answer` is the text between the model's <answer> tags ("" when it wrote none). `info` may carry success,
action_is_valid, action_is_effective and other numbers or flags: starpo's env metrics."""

import importlib
import importlib.util
import inspect
import math
import sys
from pathlib import Path
from typing import Any

from openenv.core.env_server import Environment, State

from .text_env import ConfigError, TextAction, TextObservation


def load_class(module: str, name: str) -> type:
    """The class `name` of `module`: a .py file's path, or a module name importable from the current folder."""
    where = f"spec {module}:{name}"
    if module.endswith(".py"):
        file = Path(module)
        if not file.is_file():
            raise ConfigError(f"{where}: no such file {module!r}; a spec names <module or file.py>:<Class>")
        found = importlib.util.spec_from_file_location(file.stem, file)
        loaded = importlib.util.module_from_spec(found)
        sys.modules[file.stem] = loaded
        found.loader.exec_module(loaded)
    else:
        sys.path.insert(0, str(Path.cwd()))
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as err:
            raise ConfigError(f"{where}: cannot import {module!r} ({err}); run from its folder or name its .py file") from err
    cls = getattr(loaded, name, None)
    if not inspect.isclass(cls) or not callable(getattr(cls, "reset", None)) or not callable(getattr(cls, "step", None)):
        raise ConfigError(f"{where}: {module} has no class {name!r} with reset(seed=...) and step(answer) methods")
    return cls


def _info(where: str, info: Any) -> dict[str, bool | int | float]:
    if info is None:
        return {}
    if not isinstance(info, dict):
        raise TypeError(f"{where} returned info {info!r}, not a dict")
    # Only numbers and flags are metrics; anything else (text, lists) the env keeps to itself.
    return {k: v for k, v in info.items() if isinstance(v, (bool, int, float)) and (isinstance(v, bool) or math.isfinite(v))}


class UserEnv(Environment):
    """One session of a user's class, mapped onto the bridge's TextAction / TextObservation."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, cls: type, config: dict[str, Any]):
        super().__init__()
        self.env = cls(**config)
        self.where = cls.__name__
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        out = self.env.reset(seed=seed)
        text, info = out if isinstance(out, tuple) else (out, {})
        if not isinstance(text, str):
            raise TypeError(f"{self.where}.reset returned {text!r}, not text")
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(text=text, info=_info(f"{self.where}.reset", info))

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        out = self.env.step(action.message)
        if not isinstance(out, tuple) or len(out) not in (4, 5):
            raise TypeError(f"{self.where}.step returned {out!r}, not (text, reward, done, info) or (text, reward, terminated, truncated, info)")
        text, reward, *flags, info = out
        self._state.step_count += 1
        return TextObservation(text=str(text), reward=float(reward), done=any(bool(f) for f in flags), info=_info(f"{self.where}.step", info))

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()
