"""python -m starpo_envs <spec> [--host H] [--port P] [--config JSON] [--max-sessions N]

Serves one env over OpenEnv's protocol (openenv-core's server: GET /health, a WebSocket session per episode
at /ws) until stopped. A bad spec or config exits 2 with a message naming it and what is allowed."""

import argparse
import json
import sys

from .specs import SPECS_HELP, make_app
from .text_env import ConfigError


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m starpo_envs", description=__doc__.split("\n\n")[1])
    parser.add_argument("spec", help=SPECS_HELP)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--config", default="{}", help="the env's config as a JSON object, e.g. '{\"format_penalty\": -0.01}'")
    # openenv-core allows one session at a time unless told; a run plays every env of its groups at once.
    parser.add_argument("--max-sessions", type=int, default=64, help="WebSocket sessions (episodes) at once (default 64)")
    args = parser.parse_args()
    try:
        config = json.loads(args.config)
    except json.JSONDecodeError:
        config = None
    if not isinstance(config, dict):
        print(f"starpo_envs: --config must be a JSON object, got {args.config!r}", file=sys.stderr)
        return 2
    if args.max_sessions < 1:
        print(f"starpo_envs: --max-sessions must be a positive integer, got {args.max_sessions}", file=sys.stderr)
        return 2
    try:
        app = make_app(args.spec, config, args.max_sessions)
    except ConfigError as err:
        print(f"starpo_envs: {err}", file=sys.stderr)
        return 2
    import uvicorn

    print(f"starpo_envs: serving {args.spec} at http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
