"""Gymnasium's own FrozenLake-v1 behind the bridge, on the map starpo's `frozen_lake` env draws for the same reset
seed (lake_map.py passes it as `desc`) and with its text, rewards and info. Gymnasium plays every valid move;
the bridge adds what Gymnasium has no notion of: answers that are not an action, the env-side step cap, and the
shortest plan from each state (env_config.plan_field: plan), so `warmup: solver` works as on starpo's own."""

from typing import Any

import gymnasium
from openenv.core.env_server import Environment, State

from .lake_map import ACTIONS, OBSERVATION_FORMATS, generate_map, render, shortest_path
from .text_env import ConfigError, TextAction, TextObservation, check_keys, choice, flag, integer, number

KEYS = ("size", "p", "is_slippery", "success_rate", "format_penalty", "reward_schedule", "observation_format", "max_steps")


class LakeObservation(TextObservation):
    """The text and info, and the shortest plan from this state as starpo's FrozenLakeEnv.solve() gives it:
    action names, [] on the goal, None when moves are random (slippery) or the player is in a hole."""

    plan: list[str] | None = None


def parse_config(gym_id: str, raw: dict[str, Any]) -> dict[str, Any]:
    """starpo's frozen_lake env_config keys and defaults, but is_slippery defaults to false: a slip is drawn
    from Gymnasium's generator, so slippery episodes differ from starpo's own."""
    where = f"config of gymnasium:{gym_id}"
    check_keys(where, raw, KEYS)
    p = number(where, raw, "p", 0.8, 0, 1)
    if p == 0:
        raise ConfigError(f"{where}: p must be in (0, 1] (the probability a cell is frozen), got 0")
    schedule = raw.get("reward_schedule", [1, 0, 0])
    if not (isinstance(schedule, list) and len(schedule) == 3):
        raise ConfigError(f"{where}: reward_schedule must be a list of 3 numbers [goal, hole, frozen], got {schedule!r}")
    rewards = {f"reward_schedule[{i}]": x for i, x in enumerate(schedule)}
    return {
        "size": integer(where, raw, "size", 4, 2, 64),
        "p": p,
        "is_slippery": flag(where, raw, "is_slippery", False),
        "success_rate": number(where, raw, "success_rate", 1 / 3, 0, 1),
        "format_penalty": number(where, raw, "format_penalty", 0),
        "reward_schedule": tuple(number(where, rewards, k, 0) for k in rewards),
        "observation_format": choice(where, raw, "observation_format", "grid", OBSERVATION_FORMATS),
        "max_steps": integer(where, raw, "max_steps", None, 1, 1_000_000),
    }


class FrozenLakeEnv(Environment):
    """One session's lake. reset(seed): a new Gymnasium env on generate_map(size, p, seed) (its transition table
    is built from the map). step: the answer names an action (case-insensitive) or is invalid: no move, reward
    format_penalty. Info as starpo's: success, action_is_valid, action_is_effective (the player's cell changed),
    format_penalty, and truncated when max_steps ends the episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, gym_id: str, config: dict[str, Any]):
        super().__init__()
        self.gym_id = gym_id
        self.config = config
        self.gym: Any = None
        self.desc: list[str] = []
        self.done = True
        self._state = State()

    def _player(self) -> tuple[int, int]:
        return divmod(int(self.gym.unwrapped.s), len(self.desc))

    def _plan(self, player: tuple[int, int]) -> list[str] | None:
        c = self.config
        if (c["is_slippery"] and c["success_rate"] < 1) or self.desc[player[0]][player[1]] == "H":
            return None
        goal = next((r, col) for r, row in enumerate(self.desc) for col, cell in enumerate(row) if cell == "G")
        return shortest_path(self.desc, player, goal)

    def _observation(self, reward: float | None, done: bool, info: dict[str, bool | int | float]) -> LakeObservation:
        player = self._player()
        text = render(self.desc, player, self.config["observation_format"])
        return LakeObservation(text=text, reward=reward, done=done, info=info, plan=self._plan(player))

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> LakeObservation:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"reset: seed must be a non-negative integer (the map comes from it), got {seed!r}")
        c = self.config
        self.desc = generate_map(c["size"], c["p"], seed)
        if self.gym is not None:
            self.gym.close()
        self.gym = gymnasium.make(
            self.gym_id,
            desc=self.desc,
            is_slippery=c["is_slippery"],
            success_rate=c["success_rate"],
            reward_schedule=c["reward_schedule"],
            max_episode_steps=-1,  # no TimeLimit: max_steps counts invalid answers too, as starpo's env does
        )
        self.gym.reset(seed=seed)
        self.done = False
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation(None, False, {})

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> LakeObservation:
        if self.gym is None or self.done:
            raise RuntimeError("step: no episode is running; send reset first")
        self._state.step_count += 1
        names = [name.lower() for name in ACTIONS]
        answer = action.message.strip().lower()
        if answer in names:
            before = self._player()
            _, reward, terminated, _, _ = self.gym.step(names.index(answer))
            row, col = self._player()
            info = {
                "success": self.desc[row][col] == "G",
                "action_is_valid": True,
                "action_is_effective": (row, col) != before,
                "format_penalty": 0.0,
            }
            reward, done = float(reward), bool(terminated)
        else:
            penalty = self.config["format_penalty"]
            info = {"success": False, "action_is_valid": False, "action_is_effective": False, "format_penalty": penalty}
            reward, done = penalty, False
        cap = self.config["max_steps"]
        if not done and cap is not None and self._state.step_count >= cap:
            done = True
            info["truncated"] = True
        self.done = done
        return self._observation(reward, done, info)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self.gym is not None:
            self.gym.close()
