"""Text envs written in Python, served over OpenEnv's protocol for starpo's `openenv` env type.

`python -m starpo_envs <spec>` (or `starpo env serve <spec>`) serves one spec with openenv-core's own
server: Gymnasium's FrozenLake on starpo's maps, a reasoning-gym dataset, a GEM env, or a text env class of
your own.
Every env here speaks the same schema: the action is `{"message": <the model's answer text>}`, the observation
`{"text": ..., "info": {"success", "action_is_valid", "action_is_effective", ...}}` (docs/envs.md).
"""
