"""Runs a Space's rounds once (discover, validate, PvE) on the embedded Hub seeded with the
examples, the packaged built-ins and `tests/policies/hostile/tattler` (which reads a 0600
file of the Space's user, `DATA/../space-secret.txt`, and says it), then prints one JSON
object: the isolation report, every revision's status and reason, the policies PvE
matches were played for, the banner, the operator lines, and whether the file's text is
in any record the public reads (the statuses, the match records, replays and logs). The
isolation tests run it as an ordinary user under a simulated weak kernel.

    isolation_space.py DATA        (NMMO_ARENA_ISOLATION in the environment: strict or warn)
"""

import json
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

from arena import PROJECT_ROOT
from arena.replay import read as read_replay
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
    secret = data.parent / "space-secret.txt"
    secret.write_text(f"hf_space_secret_{secrets.token_hex(8)}")
    secret.chmod(0o600)
    tattler = Path(tempfile.mkdtemp(prefix="tattler-"))
    shutil.copytree(PROJECT_ROOT / "tests" / "policies" / "hostile" / "tattler", tattler, dirs_exist_ok=True)
    (tattler / "targets.json").write_text(json.dumps({"read": str(secret)}))
    arena = Arena.start(settings, schedule=False)
    try:
        from tests_support import push_policy

        push_policy(arena.api, "mallory/tattler", tattler)
        arena.matchmaker.sync()
        arena.matchmaker.validate()
        arena.matchmaker.play_pve()
        report = arena.isolation_report()
        said = secret.read_text()
        public = [s.reason for s in arena.statuses.states()]
        for result in arena.store.results():
            public += [f.message for team in result.teams for f in team.faults]
            replay = arena.store.replay(result.match_id)
            if replay is not None:
                public.append(json.dumps(read_replay(replay)[0], default=str))
            for team_log in arena.store.logs(result.match_id) or ():
                public += [line.text for line in team_log.lines]
        print(json.dumps({
            "secret": said,
            "secret_published": any(said in text for text in public),
            "public_faults": [f.message for r in arena.store.results() for t in r.teams if t.policy_id == "mallory/tattler"
                              for f in t.faults],
            "isolation": report,
            "statuses": [{"repo": s.id.policy_id, "status": s.status.value, "reason": s.reason} for s in arena.statuses.states()],
            "pve": sorted({r.teams[0].policy_id for r in arena.store.results() if r.track == "pve"}),
            "banner": isolation_banner(report),
            "operator": arena.operator_lines(),
        }), flush=True)
    finally:
        arena.stop()
