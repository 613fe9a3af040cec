"""Records synthetic matches into a history folder until killed; prints each id once it is
durable. Used by tests that kill -9 it at random moments."""

import sys
from dataclasses import replace

import numpy as np

from arena.simulation import Population, play
from history.store import HistoryStore

store = HistoryStore(sys.argv[1])
start = int(sys.argv[2])
population = Population.random(40, seed=1)
rng = np.random.default_rng(start)
for i in range(100000):
    chosen = rng.choice(len(population.ids), size=16, replace=False)
    result = play([population.ids[c] for c in chosen], population.skills[chosen], rng=rng, index=i)
    result = replace(result, match_id=f"m{start}-{i:06d}")
    if store.record(result, replay=b"r" * 2000):
        print(result.match_id, flush=True)
    if i % 7 == 6:
        store.flush()
