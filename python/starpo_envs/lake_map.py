"""starpo's FrozenLake maps and text renderings (src/envs/frozen_lake.ts, frozen_lake_coords.ts), ported so that
Gymnasium's FrozenLake plays the map starpo's `frozen_lake` env draws for the same reset seed and shows the same
text. A map is a list of rows in Gymnasium's letters: S start, F frozen, H hole, G goal."""

from .rng import Rng

ACTIONS = ("Left", "Down", "Right", "Up")  # Gymnasium's action ids 0..3
DELTAS = ((0, -1), (1, 0), (0, 1), (-1, 0))
OBSERVATION_FORMATS = ("grid", "coord", "grid_coord", "grid_neighbors")
MAX_MAP_TRIES = 100_000


def move_from(pos: tuple[int, int], a: int, size: int) -> tuple[int, int]:
    """The cell reached from `pos` with action id `a`; a move off the grid stays put."""
    return (min(size - 1, max(0, pos[0] + DELTAS[a][0])), min(size - 1, max(0, pos[1] + DELTAS[a][1])))


def shortest_path(desc: list[str], start: tuple[int, int], goal: tuple[int, int]) -> list[str] | None:
    """starpo's shortestPath: breadth-first through non-hole cells, neighbours in action order, so the same plan
    (action names; [] on the goal) or None when the goal is unreachable."""
    size = len(desc)
    prev: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
    seen, queue = {start}, [start]
    for cur in queue:
        if cur == goal:
            actions = []
            while cur != start:
                cur, a = prev[cur]
                actions.append(ACTIONS[a])
            return actions[::-1]
        for a in range(4):
            nxt = move_from(cur, a, size)
            if nxt not in seen and desc[nxt[0]][nxt[1]] != "H":
                seen.add(nxt)
                prev[nxt] = (cur, a)
                queue.append(nxt)
    return None


def generate_map(size: int, p: float, seed: int) -> list[str]:
    """starpo's generateMap(size, p, Rng('frozen_lake/map', seed)): per attempt size*size cell draws (row-major,
    frozen when the draw is below p), start row and col, then goal row and col until distinct from the start;
    drawn again until a path exists."""
    rng = Rng("frozen_lake/map", seed)
    for _ in range(MAX_MAP_TRIES):
        grid = [["F" if rng.next() < p else "H" for _ in range(size)] for _ in range(size)]
        start = (rng.int(size), rng.int(size))
        goal = start
        while goal == start:
            goal = (rng.int(size), rng.int(size))
        grid[start[0]][start[1]] = "S"
        grid[goal[0]][goal[1]] = "G"
        desc = ["".join(row) for row in grid]
        if shortest_path(desc, start, goal) is not None:
            return desc
    raise ValueError(f"no solvable {size}x{size} map with p={p} after {MAX_MAP_TRIES} attempts; raise p")


def _symbol(cell: str, here: bool) -> str:
    if cell == "H":
        return "X" if here else "O"
    if cell == "G":
        return "√" if here else "G"
    return "P" if here else "_"


def _grid(desc: list[str], player: tuple[int, int]) -> str:
    return "\n".join(
        "".join(_symbol(cell, (r, c) == player) for c, cell in enumerate(row)) for r, row in enumerate(desc)
    )


def _neighbors(desc: list[str], player: tuple[int, int]) -> str:
    sides = []
    for a, name in enumerate(ACTIONS):
        nxt = move_from(player, a, len(desc))
        sides.append(f"{name}:{'#' if nxt == player else _symbol(desc[nxt[0]][nxt[1]], False)}")
    return " ".join(sides)


def _coords(desc: list[str], player: tuple[int, int]) -> str:
    def cells(letter: str) -> list[tuple[int, int]]:
        return [(r, c) for r, row in enumerate(desc) for c, cell in enumerate(row) if cell == letter]

    here = desc[player[0]][player[1]]
    label = "Player on goal" if here == "G" else "Player in hole" if here == "H" else "Player"
    lines = [f"Board size: {len(desc)} rows x {len(desc)} cols (zero-indexed)."]
    for name, found in (("Start", cells("S")), ("Goal", cells("G")), (label, [player]), ("Holes", cells("H"))):
        if found:
            lines.append(f"{name}: {', '.join(f'({r}, {c})' for r, c in found)}")
    return "\n".join(lines)


def render(desc: list[str], player: tuple[int, int], observation_format: str) -> str:
    """starpo's FrozenLakeEnv.render() text for this map, player cell and `observation_format`."""
    if observation_format == "grid":
        return _grid(desc, player)
    if observation_format == "grid_neighbors":
        return f"{_grid(desc, player)}\n{_neighbors(desc, player)}"
    coords = _coords(desc, player)
    return coords if observation_format == "coord" else f"Coordinates: \n{coords}\nGrid Map: \n{_grid(desc, player)}"
