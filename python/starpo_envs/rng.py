"""starpo's seeded stream (src/util/rng.ts), bit for bit: the same parts give the same draws as the TypeScript
`Rng`, so a map drawn here from a reset seed is the map starpo's own env draws from it."""

import math

MASK = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & MASK


def _seed_words(parts: tuple) -> list[int]:
    # FNV-1a over the UTF-16 code units of the parts joined by NUL (JavaScript's charCodeAt), then splitmix32.
    text = "\u0000".join(str(p) for p in parts)
    units = text.encode("utf-16-le")
    h = 0x811C9DC5
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = _imul(h, 0x01000193)
    out = []
    s = h
    for _ in range(4):
        s = (s + 0x9E3779B9) & MASK
        z = s
        z = _imul(z ^ (z >> 16), 0x85EBCA6B)
        z = _imul(z ^ (z >> 13), 0xC2B2AE35)
        out.append((z ^ (z >> 16)) & MASK)
    return out


class Rng:
    """sfc32 seeded from its parts, as src/util/rng.ts (only the draws FrozenLake's map uses)."""

    def __init__(self, *parts: int | str):
        self.a, self.b, self.c, self.d = _seed_words(parts)
        for _ in range(12):
            self.next_uint32()

    def next_uint32(self) -> int:
        t = (self.a + self.b + self.d) & MASK
        self.d = (self.d + 1) & MASK
        self.a = self.b ^ (self.b >> 9)
        self.b = (self.c + (self.c << 3)) & MASK
        self.c = ((self.c << 21) | (self.c >> 11)) & MASK
        self.c = (self.c + t) & MASK
        return t

    def next(self) -> float:
        """Uniform in [0, 1) with 32 bits of randomness."""
        return self.next_uint32() / 4294967296

    def int(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        return math.floor(self.next() * n)
