"""Which map a match plays: the published pool, or the held-out pool only this Space knows.

Two pools, one rule each:

- **Published** (map ids 1..`MatchConfig.map_pool`, 256): what PvE, validation and
  `python -m matchmaking.evaluate` play. A map depends only on its id and the nmmo
  version (`matchmaking.engine.game.ensure_map`), so anyone reproduces these matches locally.
- **Held-out** (map ids `PUBLISHED_POOL + k`, k in 1..`HELD_OUT_POOL`): what PvP plays. Map
  k's terrain, scale and resources are drawn from HMAC-SHA256(key, k), the key being
  derived from the Space's secret (`NMMO_ARENA_MAP_SECRET`, or DATA/map-secret made on
  the first start). Without the secret nobody can generate them, so a policy tuned to the
  published maps meets maps it has never seen: its PvP standing measures how it
  generalises, and the gap to its PvE standing is the overfitting signal of the leaderboard.

The held-out terrain comes from the same generator as the published one, with a noise
seed taken from a range the published pool never uses (nmmo seeds map index i with i + 1,
so published maps use 1..256) and a terrain scale from the published pool's own scales:
same kind of map, different maps.

`spec_map(seed, held_out, key, config)` is the one function that says which map a match
plays and where it is cached; the runner and reruns of recorded matches call it. A match's seed picks the index in its pool (the index is not
secret: the map behind it is).

Example:
    >>> from matchmaking.engine.config import MatchConfig
    >>> map_id_for(7, held_out=False, config=MatchConfig())
    181
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import numpy as np
from nmmo.core.terrain import MapGenerator

from arena.errors import InvalidArgumentError, MatchSetupError
from arena.files import secret_file
from arena.settings import ArenaSettings
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.readable import ARENA_CODE, system_readable

#: Size of the published pool, whose maps keep the ids 1..256 they always had.
PUBLISHED_POOL = 256

#: Maps in the held-out pool: four times the published pool, so that the few a participant
#: sees in replays of its own PvP matches say little about the ones it will meet next.
HELD_OUT_POOL = 1024

#: Noise seeds held-out terrain is drawn from, above the published pool's 1..256: 2^24, so
#: that the noise's coordinates (seed x 128 tiles) stay far inside float64's exact range.
TERRAIN_SEEDS = 2**24

# Distinguishes the held-out map-choice stream from the other streams drawn from a match seed.
_HELD_OUT_STREAM = 0x686F6C64  # "hold"

# What the held-out key is derived for: another use of the same secret gets another key.
_KEY_PURPOSE = b"nmmo-arena held-out maps v1"


def held_out_key(secret: str) -> str:
    """The key held-out maps are generated from: HMAC-SHA256 of a fixed purpose under the
    Space's secret, hex. The secret itself never reaches a match process.

    Raises:
        `MatchSetupError`: `secret` is empty.
    """
    if not secret:
        raise MatchSetupError("The held-out maps need a secret: set NMMO_ARENA_MAP_SECRET (or let the Space make DATA/map-secret).")
    return hmac.new(secret.encode(), _KEY_PURPOSE, hashlib.sha256).hexdigest()


def space_key(settings: ArenaSettings) -> str:
    """The held-out key of a Space: from `NMMO_ARENA_MAP_SECRET`, else from DATA/map-secret,
    made (random, mode 0600) on the first start, with the embedded Hub or a real one."""
    return held_out_key(settings.map_secret or secret_file(settings.map_secret_file))


def key_fingerprint(key: str) -> str:
    """A short one-way name of a key (16 hex digits): names its cache folder, and tells two
    keys apart in a log, without revealing the key."""
    return hashlib.sha256(b"nmmo-arena held-out fingerprint:" + key.encode()).hexdigest()[:16]


def check_key(held_out: bool, key: str | None) -> None:
    """Refuse a held-out match without a key, saying what to set.

    Raises:
        `MatchSetupError`: `held_out` is true and `key` is empty.
    """
    if held_out and not key:
        raise MatchSetupError(
            "This match plays a held-out map, but its MatchConfig has no `map_key`: build the config with "
            "`map_key=matchmaking.engine.maps.space_key(settings)` (the Space's NMMO_ARENA_MAP_SECRET or DATA/map-secret), "
            "or play the published pool (`held_out=False`)."
        )


def map_id_for(seed: int, *, held_out: bool, config: MatchConfig) -> int:
    """The map id a seed plays in its pool: 1..`map_pool` published, `PUBLISHED_POOL` + 1..
    `HELD_OUT_POOL` held-out. Needs no key (the index is public, the map is not)."""
    if not held_out:
        return game.map_id_for_seed(seed, config.map_pool)
    state = np.random.SeedSequence([seed, _HELD_OUT_STREAM]).generate_state(1)[0]
    return PUBLISHED_POOL + 1 + int(state) % HELD_OUT_POOL


def is_held_out(map_id: int) -> bool:
    """Whether a recorded `map_id` is from the held-out pool."""
    return map_id > PUBLISHED_POOL


def spec_map(seed: int, held_out: bool, key: str | None, config: MatchConfig) -> tuple[int, Path]:
    """The map a match of `seed` plays, generated (once) if need be: (map id, folder nmmo
    loads it from). The one place that decides it.

    Args:
        seed (`int`): the match's seed.
        held_out (`bool`): the held-out pool (PvP) rather than the published one.
        key (`str`, *optional*): the held-out key (`config.map_key`); unused when published.
        config (`MatchConfig`): the pool size and the cache folder.

    Returns:
        `tuple[int, Path]`: the id to record and the map's folder.

    Raises:
        `MatchSetupError`: a held-out map without a key, or a cache folder a sandboxed team
            could read.

    Example:
        >>> from matchmaking.engine.config import MatchConfig
        >>> spec_map(7, False, None, MatchConfig())[0]
        181
    """
    map_id = map_id_for(seed, held_out=held_out, config=config)
    if not held_out:
        return map_id, game.ensure_map(map_id, config)
    check_key(held_out, key)
    return map_id, ensure_held_out(map_id - PUBLISHED_POOL, key, config)  # type: ignore[arg-type]


def held_out_folder(key: str, config: MatchConfig) -> Path:
    """Where a key's held-out maps are cached: a folder named by the key's fingerprint."""
    return config.maps_dir / f"nmmo-{game.NMMO_VERSION}-held-out-{key_fingerprint(key)}"


def ensure_held_out(index: int, key: str, config: MatchConfig) -> Path:
    """Generate held-out map `index` (1..`HELD_OUT_POOL`) of `key` once; return its folder.

    Raises:
        `MatchSetupError`: the cache folder lies where a sandboxed team may read.
    """
    if not 1 <= index <= HELD_OUT_POOL:
        raise InvalidArgumentError(f"A held-out map index is between 1 and {HELD_OUT_POOL}, got {index}.")
    root = held_out_folder(key, config)
    _check_unreadable(root)
    folder = root / str(index)
    if game.map_saved(folder):
        return folder
    terrain, tiles = generate_held_out(index, key)
    return game.save_map(folder, terrain, tiles)


def generate_held_out(index: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Held-out map `index` of `key`: (fractal, tiles), as nmmo's generator returns them.

    The HMAC of the index under the key gives three numbers: the terrain's noise seed
    (above the published pool's), its scale (one of the published pool's 256), and the seed
    of the resources' placement.
    """
    digest = hmac.new(key.encode(), f"map {index}".encode(), hashlib.sha256).digest()
    noise_seed = PUBLISHED_POOL + 1 + int.from_bytes(digest[0:4], "big") % TERRAIN_SEEDS
    scale_index = int.from_bytes(digest[4:6], "big") % PUBLISHED_POOL
    resources_seed = int.from_bytes(digest[8:16], "big")
    config = game.ArenaNmmoConfig()
    scales = np.logspace(config.TERRAIN_LOG_INTERPOLATE_MIN, config.TERRAIN_LOG_INTERPOLATE_MAX, PUBLISHED_POOL)
    generator = MapGenerator(config)
    # ALGO LOGIC: nmmo seeds its noise with map index + 1 and reads the scale at that index
    # of its table of scales, so a one-entry table stands in for the pool's
    terrain_index = noise_seed - 1
    generator.interpolaters = {terrain_index: scales[scale_index]}
    return generator.generate_map(terrain_index, np.random.default_rng(resources_seed))


def _check_unreadable(folder: Path) -> None:
    """Refuse to cache held-out maps where a sandboxed team may read (the Python
    installation, system folders, the Arena's code): they would no longer be held out."""
    resolved = folder.resolve()
    for readable in [*system_readable(), *ARENA_CODE]:
        if readable.is_relative_to("/proc"):
            continue
        if resolved.is_relative_to(readable.resolve()):
            raise MatchSetupError(
                f"The held-out maps' cache {folder} is inside {readable}, which sandboxed teams may read: "
                f"set NMMO_ARENA_CACHE to a folder outside it (the default is the project's .cache)."
            )


__all__ = [
    "HELD_OUT_POOL",
    "PUBLISHED_POOL",
    "TERRAIN_SEEDS",
    "check_key",
    "ensure_held_out",
    "generate_held_out",
    "held_out_folder",
    "held_out_key",
    "is_held_out",
    "key_fingerprint",
    "map_id_for",
    "space_key",
    "spec_map",
]
