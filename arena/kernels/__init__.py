"""The rating engines' inner loops, compiled with numba: the TrueSkill update itself, and
loops each beside the pure-Python rule it repeats.

Why this exists: recomputing the ratings from the published history is the Arena's promise
of transparency, and in pure Python it took minutes for 100,000 matches (TrueSkill 93 s, the
Plackett-Luce bootstrap 356 s). Here are the TrueSkill update and loops over whole arrays:

- `rate_ffa`: THE TrueSkill update of the Arena, one free-for-all match of one-player teams,
  the `trueskill` package's own schedule specialised to that case, equal to the package
  within 1e-6 and bit for bit in practice (tests/test_trueskill_update.py). Every caller
  uses it: `arena.ratings.trueskill.rate_match` for one match (with the package's mpmath
  fallback where the float maths fails) and `trueskill_history` below for a whole history.
- `trueskill_history`: `rate_ffa` applied match after match, as
  `arena.ratings.trueskill.trueskill_reference` applies `rate_match` (bit for bit,
  tests/test_kernels.py; the `trueskill` package's within 1e-6: 3.6e-11 over 2,000 matches
  of 16, `bench.ratings_recompute`). Where `rate_ffa` fails (the float maths would raise a
  `FloatingPointError` of the package, a math domain error, a division by zero, an
  overflow) the loop stops before that match and says so; the caller rates that one match
  with `rate_match` and its mpmath fallback, and resumes.
- `elo_history`: `arena.ratings.elo_ratings`'s per-match duels.
- `plackett_luce_nll`: the Plackett-Luce negative log-likelihood and its gradient
  (`arena.ratings.mle.negative_log_likelihood`) in one pass over the matches, the GIL released
  so that bootstrap resamples fit on several threads at once (equal within about 1e-15).
- `pair_counts`: `arena.head_to_head._counts`, every pair's meetings, wins and ties.

numba is optional: `AVAILABLE` says whether it imported. Without it `rate_ffa` runs as plain
Python (the same numbers, slower) and the other callers keep their pure-Python paths (same
results, minutes instead of seconds). Where the compiled code is cached: `compiler.py`. The
first compilation takes several seconds (`bench.ratings_recompute` reports it as
`compile_s`); later runs load the cache.
"""

from arena.kernels.compiler import AVAILABLE
from arena.kernels.elo import elo_history
from arena.kernels.head_to_head import pair_counts
from arena.kernels.plackett_luce import plackett_luce_nll
from arena.kernels.trueskill import OK, rate_ffa, trueskill_history

__all__ = ["AVAILABLE", "OK", "rate_ffa", "trueskill_history", "elo_history", "plackett_luce_nll", "pair_counts"]
