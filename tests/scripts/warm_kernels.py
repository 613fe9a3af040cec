"""Compiles every numba kernel the Arena has into numba's cache, with the argument types the
Arena passes them: the built-ins' searches (compiled as `compiled_builtins` is imported)
and the rating engines' loops (compiled at their first call, here on a one-match history).

The cache sits next to the kernels' modules and is keyed by their files' times, so a fresh
clone starts with none. The test suite runs this once before its workers start (conftest);
otherwise every worker, and every Space and match process its tests start, compiles the
same kernels at once (about 12 s of CPU each) until one has written the cache.

    python tests/scripts/warm_kernels.py     (from the repository's root)
"""

import matchmaking.teams.compiled_builtins  # noqa: F401 - compiles at import
from arena.head_to_head import head_to_head
from arena.kernels.trueskill import v_w_draw, v_w_win
from arena.ratings import Outcome, elo_ratings, plackett_luce, trueskill_ratings
from arena.ratings.trueskill import rate_match

one_match = [Outcome(("a", "1"), ("x", "y", "z"), (2, 1, 1))]
trueskill_ratings(one_match, anchors={})
elo_ratings(one_match, anchors={})
plackett_luce(one_match, anchors={}, bootstrap=2)
rate_match([(25.0, 8.0), (25.0, 8.0)], [0, 1])
head_to_head(one_match)
v_w_win(0.5, 0.1, 2.0)
v_w_draw(0.5, 0.1, 2.0)
