"""A GEM env (PyPI gem-llm: the env library ROLL integrates) served by the bridge: spec `gem:<env id>`, made
with gem.make(id, **config) once per session. GEM's games and reasoning-gym tasks parse the action from
\\boxed{...} anywhere in the reply, so an answer without a \\boxed{} is boxed: starpo's <answer>5</answer> reaches
GEM as \\boxed{5}, and a reply sent whole (env_config.action: response) keeps its own boxes. GEM reports no
success flag; its games pay 1 for a win and its tasks score in [0, 1], so a final reward of 1 is a success."""

import importlib
import inspect
import math
from typing import Any

from openenv.core.env_server import Environment, State

from .text_env import ConfigError, TextAction, TextObservation

# game: (GEM's text games) and rg: (reasoning-gym through GEM) generate their episodes locally; the other
# families (math:, qa:, code:, eval:, ...) load datasets from the Hugging Face hub or need tools or sandboxes.
SERVED_PREFIXES = ("game:", "rg:")


def _registry() -> dict[str, Any]:
    from gem.envs.registration import ENV_REGISTRY

    return ENV_REGISTRY


def parse_config(env_id: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config as gem.make's keyword arguments; one env is made here so a bad id or key fails when the
    server starts, not at the first reset."""
    import gem

    served = sorted(i for i in _registry() if i.startswith(SERVED_PREFIXES))
    if env_id not in served:
        raise ConfigError(
            f"spec gem:{env_id}: the bridge serves GEM's {' and '.join(SERVED_PREFIXES)} envs (they need no download), "
            f"e.g. gem:game:GuessTheNumber-v0-easy, gem:game:Sudoku-v0-easy, gem:rg:basic_arithmetic; "
            f"{len(served)} ids in all (python -c 'import gem; print(gem.envs.registration.ENV_REGISTRY.keys())')"
        )
    # GEM's envs swallow unknown keyword arguments (**kwargs), so a misspelt key would be ignored silently.
    module, _, cls_name = _registry()[env_id].entry_point.partition(":")
    params = inspect.signature(getattr(importlib.import_module(module), cls_name).__init__).parameters.values()
    allowed = [p.name for p in params if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for key, value in config.items():
        if key not in allowed:
            raise ConfigError(f"config of gem:{env_id}: unknown key {key!r} (value {value!r}); allowed: {', '.join(allowed)}")
    try:
        gem.make(env_id, **config).reset(seed=0)
    except TypeError as err:
        raise ConfigError(f"spec gem:{env_id}: --config {config!r} does not fit gem.make({env_id!r}, ...): {err}") from err
    return config


def _boxed(message: str) -> str:
    return message if "\\boxed{" in message or message.strip() == "" else f"\\boxed{{{message.strip()}}}"


def _metrics(info: dict[str, Any]) -> dict[str, bool | int | float]:
    return {k: v for k, v in info.items() if isinstance(v, (bool, int, float)) and (isinstance(v, bool) or math.isfinite(v))}


class GemEnv(Environment):
    """One GEM episode per session, mapped onto the bridge's TextAction / TextObservation."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, config: dict[str, Any]):
        super().__init__()
        import gem

        self.env = gem.make(env_id, **config)
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        text, info = self.env.reset(seed=seed)
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(text=str(text), info=_metrics(info or {}))

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        text, reward, terminated, truncated, info = self.env.step(_boxed(action.message))
        self._state.step_count += 1
        done = bool(terminated or truncated)
        info = info or {}
        # GEM's games put the prompt for the next move in info["suffix"]; the model sees it after the feedback.
        suffix = info.get("suffix")
        if not done and isinstance(suffix, str) and suffix:
            text = f"{text}\n{suffix}"
        metrics = {**_metrics(info), "success": done and float(reward) >= 1.0}
        return TextObservation(text=str(text), reward=float(reward), done=done, info=metrics)

    @property
    def state(self) -> State:
        return self._state
