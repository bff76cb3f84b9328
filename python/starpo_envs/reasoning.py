"""A reasoning-gym dataset as a one-turn env: reset(seed) builds the dataset with that seed and size 1 and asks
its one question; the step's answer is scored with the dataset's own score_answer and the episode ends."""

import dataclasses
from typing import Any

from openenv.core.env_server import Environment, State
from reasoning_gym.factory import DATASETS, create_dataset

from .text_env import ConfigError, TextAction, TextObservation, number

# Set by the bridge for each question, never by the config.
RESERVED = ("seed", "size")


def parse_config(dataset: str, raw: dict[str, Any]) -> dict[str, Any]:
    """format_penalty (the reward of an empty answer, default 0) and the dataset's own config fields; the
    dataset is built once here so a bad value fails when the server starts, not at the first reset."""
    where = f"config of reasoning_gym:{dataset}"
    if dataset not in DATASETS:
        raise ConfigError(f"unknown reasoning_gym dataset {dataset!r}; allowed: {', '.join(sorted(DATASETS))}")
    fields = [f.name for f in dataclasses.fields(DATASETS[dataset][1]) if f.name not in RESERVED]
    dataset_keys = {k: v for k, v in raw.items() if k != "format_penalty"}
    for key, value in dataset_keys.items():
        if key not in fields:
            raise ConfigError(f"{where}: unknown key {key!r} (value {value!r}); allowed: format_penalty, {', '.join(fields)}")
    try:
        create_dataset(dataset, **dataset_keys, seed=0, size=1)[0]
    except (AssertionError, ValueError, TypeError) as err:
        raise ConfigError(f"{where}: the dataset refuses {dataset_keys!r}: {err}") from err
    return {"format_penalty": number(where, raw, "format_penalty", 0), "dataset": dataset_keys}


class ReasoningGymEnv(Environment):
    """One question per episode. An empty answer (the model wrote no <answer> tags) is invalid: reward
    format_penalty. Otherwise reward = score_answer (in [0, 1]); success when it is 1."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, name: str, config: dict[str, Any]):
        super().__init__()
        self.name = name
        self.config = config
        self.dataset: Any = None
        self.entry: dict[str, Any] | None = None
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"reset: seed must be a non-negative integer (the question comes from it), got {seed!r}")
        self.dataset = create_dataset(self.name, **self.config["dataset"], seed=seed, size=1)
        self.entry = self.dataset[0]
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(text=self.entry["question"], done=False, info={})

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if self.entry is None:
            raise RuntimeError("step: no question is open; send reset first")
        entry, self.entry = self.entry, None
        self._state.step_count += 1
        answer = action.message.strip()
        if answer == "":
            penalty = self.config["format_penalty"]
            info = {"success": False, "action_is_valid": False, "action_is_effective": False, "format_penalty": penalty}
            return TextObservation(text="no answer", reward=penalty, done=True, info=info)
        score = float(self.dataset.score_answer(answer, entry))
        info = {"success": score >= 1.0, "action_is_valid": True, "action_is_effective": True, "format_penalty": 0.0}
        return TextObservation(text=f"score {score:g}; the answer: {entry['answer']}", reward=score, done=True, info=info)

    @property
    def state(self) -> State:
        return self._state
