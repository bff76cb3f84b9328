"""The schema every env of the bridge speaks (the defaults of starpo's `openenv` env type, docs/envs.md) and the
checks of an env's config. openenv-core's serializer drops an observation's `metadata`, so the step's info is
an observation field of its own."""

import math
from typing import Any

from openenv.core.env_server import Action, Observation


class TextAction(Action):
    """The model's answer: the text between its <answer> tags ("" when it wrote none)."""

    message: str


class TextObservation(Observation):
    """What the model sees next, and the step's info: success, action_is_valid, action_is_effective and other
    numbers or flags (starpo's env metrics)."""

    text: str
    info: dict[str, bool | int | float] = {}


class ConfigError(ValueError):
    """A spec or config key the bridge refuses; the message names the key, the value and what is allowed."""


def check_keys(where: str, config: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in config:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (value {config[key]!r}); allowed: {', '.join(allowed)}")


def number(where: str, config: dict[str, Any], key: str, default: float, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite number in [low, high] (bools are not numbers here)."""
    v = config.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
        raise ConfigError(f"{where}: {key} must be a finite number in [{low}, {high}], got {v!r}")
    return float(v)


def integer(where: str, config: dict[str, Any], key: str, default: int | None, low: int, high: int) -> int | None:
    """An integer in [low, high], or None when absent (or null) and the default is None."""
    v = config.get(key, default)
    if v is None and default is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ConfigError(f"{where}: {key} must be an integer in [{low}, {high}], got {v!r}")
    return v


def flag(where: str, config: dict[str, Any], key: str, default: bool) -> bool:
    v = config.get(key, default)
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {v!r}")
    return v


def choice(where: str, config: dict[str, Any], key: str, default: str, allowed: tuple[str, ...]) -> str:
    v = config.get(key, default)
    if v not in allowed:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(allowed)}, got {v!r}")
    return v
