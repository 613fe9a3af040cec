"""Runs a Space's rounds once (discover, validate, PvE) on the embedded Hub seeded with the
examples and packaged built-ins, then prints one JSON object: the isolation report, every
revision's status and reason, the policies PvE matches were played for, the banner and the
operator lines. The isolation tests run it as an ordinary user under a simulated weak kernel.

    isolation_space.py DATA        (NMMO_ARENA_ISOLATION in the environment: strict or warn)
"""

import json
import os
import sys
from pathlib import Path

from arena.settings import ArenaSettings
from leaderboard.pages import isolation_banner
from matchmaking.service.space import Arena

if __name__ == "__main__":
    data = Path(sys.argv[1])
    settings = ArenaSettings(
        data_dir=data, cache_dir=data / "cache", local_hub_port=0, match_horizon=16, workers=1, pve_matches_per_stage=2, pve_matches_per_round=2,
        audit_minutes=0, model_cards=False, map_secret="isolation-test-map-secret", validation_ticks=4,
        isolation=os.environ.get("NMMO_ARENA_ISOLATION", "strict"),
    )
    arena = Arena.start(settings, schedule=False)
    try:
        arena.matchmaker.sync()
        arena.matchmaker.validate()
        arena.matchmaker.play_pve()
        report = arena.isolation_report()
        print(json.dumps({
            "isolation": report,
            "statuses": [{"repo": s.id.policy_id, "status": s.status.value, "reason": s.reason} for s in arena.statuses.states()],
            "pve": sorted({r.teams[0].policy_id for r in arena.store.results() if r.track == "pve"}),
            "banner": isolation_banner(report),
            "operator": arena.operator_lines(),
        }), flush=True)
    finally:
        arena.stop()
