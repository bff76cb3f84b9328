"""A starpo run's steps into W&B, through W&B's own client (src/trackers/wandb.ts runs this in the venv of
python/wandb_requirements.txt).

  python starpo_wandb.py last <dir> <run_id>   prints {"lastStep": N}: the highest step the run's files hold
  python starpo_wandb.py log                    reads {"dir", "run_id", "init", "steps"} on stdin, logs the
                                                steps above lastStep, prints {"written": [...], "lastStep": N}

The run's .wandb files under <dir>/wandb are the cursor, read with W&B's own reader (wandb-core's
`leet inspect`). Every call that logs makes one more run folder (W&B names them by run id and start second)
and logs steps above every earlier folder's, in order, so the highest step is in the newest folder that has
one. A writer killed mid-way leaves a prefix of its steps (the reader stops at a cut record), and the next
writer goes on after it. A writer whose parent dies exits at once, so one that takes the folder over
(src/trackers/folder_lock.ts) never writes beside it. WANDB_MODE from the environment wins over the default, offline.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

FOLDER = re.compile(r"(?:offline-)?run-(\d{8}_\d{6})-(.+)")
# How long the newest file must stay unchanged before it is read when it lacks an exit record: a killed
# client's wandb-core may still be writing what it had received.
SETTLE_SECONDS = 2.0


def run_files(wandb_dir: Path, run_id: str) -> list[Path]:
    """The run's .wandb files, oldest first (folder names sort by start time)."""
    if not wandb_dir.is_dir():
        return []
    found = []
    for folder in wandb_dir.iterdir():
        m = FOLDER.fullmatch(folder.name)
        file = folder / f"run-{run_id}.wandb"
        if m and m.group(2) == run_id and file.is_file():
            found.append((m.group(1), folder.name, file))
    return [file for *_, file in sorted(found)]


def records(wandb_dir: Path, file: Path) -> list[dict]:
    """The file's records as W&B's reader prints them (one JSON object a line)."""
    from wandb.util import get_core_path

    args = [get_core_path(), "leet", "inspect", "--no-observability", "--json", "--run-file", str(file), str(wandb_dir)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def settled(file: Path) -> None:
    """Waits until `file` has not grown for SETTLE_SECONDS."""
    size = -1
    while size != file.stat().st_size:
        size = file.stat().st_size
        time.sleep(SETTLE_SECONDS)


def last_step(root: Path, run_id: str) -> int:
    wandb_dir = root / "wandb"
    for file in reversed(run_files(wandb_dir, run_id)):
        recs = records(wandb_dir, file)
        if not any(r.get("type") == "exit" for r in recs):
            settled(file)
            recs = records(wandb_dir, file)
        steps = [r["history"]["item"]["_step"] for r in recs if r.get("type") == "history"]
        if steps:
            return max(steps)
    return -1


def new_second(root: Path, run_id: str) -> None:
    """Waits until no folder of the run is named by the current second, so W&B makes a new one."""
    while any(datetime.now().strftime("%Y%m%d_%H%M%S") in f.parent.name for f in run_files(root / "wandb", run_id)):
        time.sleep(0.2)


def log(payload: dict) -> dict:
    root, run_id = Path(payload["dir"]), payload["run_id"]
    last = last_step(root, run_id)
    todo = [s for s in payload["steps"] if s["step"] > last]
    if not todo:
        return {"written": [], "lastStep": last}
    root.mkdir(parents=True, exist_ok=True)
    new_second(root, run_id)
    os.environ.setdefault("WANDB_MODE", "offline")
    import wandb

    settings = wandb.Settings(silent=True, console="off", x_disable_stats=True, save_code=False, disable_git=True)
    run = wandb.init(dir=str(root), id=run_id, resume="allow", settings=settings, **payload["init"])
    for s in todo:
        # _timestamp: when the store got the step, as the other trackers stamp it
        run.log({**s["metrics"], "_timestamp": s["wallTime"]}, step=s["step"], commit=True)
    run.finish()
    return {"written": [s["step"] for s in todo], "lastStep": todo[-1]["step"]}


def exit_with_parent() -> None:
    """Exits when the parent process is gone (this one is then reparented), however it ended."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    exit_with_parent()
    if sys.argv[1:2] == ["last"]:
        result = {"lastStep": last_step(Path(sys.argv[2]), sys.argv[3])}
    else:
        result = log(json.load(sys.stdin))
    # the last line of stdout is the answer (W&B may print before it)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
