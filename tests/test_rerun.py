"""Every match rerunnable: `python -m matchmaking.rerun` on matches a real Space recorded
(on its embedded Hub, running and then stopped), and the matchmaker's audit of itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena import ARENA_VERSION
from arena.errors import NotReproducibleError
from arena.schema import MatchResult, TaskResult, TeamResult
from arena.settings import ArenaSettings
from history.audits import Audit, AuditLog, next_to_audit, other_versions, summarize
from leaderboard.about import audit_markdown
from matchmaking.service.rerun import first_difference, spec_for
from tests_support import EXAMPLES, TESTS, push_policy

pytestmark = pytest.mark.slow

ROOT = TESTS.parent
NMMO = "2.1.2"


def rerun_cli(match_id: str, data: Path, *extra: str) -> tuple[int, dict, str]:
    """`python -m matchmaking.rerun MATCH_ID --data DATA --json`: exit status, JSON, stderr."""
    done = subprocess.run([sys.executable, "-m", "matchmaking.rerun", match_id, "--data", str(data), "--json", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    try:
        return done.returncode, json.loads(done.stdout), done.stderr
    except json.JSONDecodeError:
        raise AssertionError(f"the rerun printed no JSON (exit {done.returncode}); its stderr:\n{done.stderr[-3000:]}") from None


def record_copy(space, tmp_path: Path, match_id: str, change, *, secret: bool = True) -> Path:
    """A copy of the Space's data folder's history (and, with `secret`, its map secret, so
    held-out maps can be made again) with one recorded match rewritten by
    `change(record_dict)`, as a data folder of its own."""
    data = tmp_path / "copy"
    shutil.copytree(space.settings.history_dir, data / "history", ignore=shutil.ignore_patterns(".*"))
    if secret:
        shutil.copy2(space.settings.map_secret_file, data / space.settings.map_secret_file.name)
    wal = data / "history" / "wal" / f"{match_id}.json"
    assert wal.exists(), "the PvP match is still in the write-ahead log"
    record = json.loads(wal.read_text())
    change(record)
    wal.write_text(json.dumps(record))
    return data


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """A real Space on its embedded Hub (schedule off, 24-tick matches): a submission
    validated, its PvE matches played (the last flushed into a shard), one PvP match
    left in the write-ahead log."""
    from matchmaking.service.space import Arena

    settings = ArenaSettings(
        data_dir=tmp_path_factory.mktemp("space") / "data", local_hub_port=0, match_horizon=24, workers=1,
        pve_matches_per_stage=1, next_stage_top1=0.0, qualify_achievement=0.0, seed_examples=False, audit_minutes=1.0,
    )
    arena = Arena.start(settings, schedule=False)
    holder = SimpleNamespace(arena=arena, settings=settings, running=True)
    try:
        holder.first = push_policy(arena.api, "alice/gatherer", EXAMPLES / "gatherer")
        m = arena.matchmaker
        assert m.sync() == 1
        m.validate()
        while m.play_pve():
            pass
        m.flush()
        assert m.play_pvp() == 1
        results = arena.store.results()
        holder.pve = next(r for r in results if r.track == "pve" and r.stage == 1)
        holder.pvp = next(r for r in results if r.track == "pvp")
        holder.validation = next(r for r in results if r.track == "validation")
        yield holder
    finally:
        if holder.running:
            arena.stop()


def test_a_recorded_pve_match_reruns_identical_on_the_running_space(space):
    assert (space.settings.data_dir / "local-hub.json").exists()
    code, out, err = rerun_cli(space.pve.match_id, space.settings.data_dir)
    assert code == 0, err
    assert out["match_id"] == space.pve.match_id and out["identical"] is True and out["difference"] is None
    assert out["derived_match_id"] == space.pve.match_id
    assert "found in local-hub.json" in out["hub"]  # the running Space's Hub, reused
    assert out["recorded"]["track"] == "pve" and out["recorded"]["teams"][0]["policy_id"] == "alice/gatherer"
    assert out["recorded"]["teams"][0]["revision"] == space.first and out["duration_s"] > 0
    assert "Fetched alice/gatherer@" in err and "Verdict: identical" in err  # the steps, on stderr with --json


def test_a_recorded_pvp_match_from_the_write_ahead_log_reruns_identical(space):
    assert (space.settings.history_dir / "wal" / f"{space.pvp.match_id}.json").exists()
    code, out, err = rerun_cli(space.pvp.match_id, space.settings.data_dir)
    assert code == 0, err
    assert out["identical"] is True and out["recorded"]["track"] == "pvp"
    assert space.pvp.held_out  # PvP plays held-out maps: rerun with the Space's own secret, from its data folder


def test_a_record_naming_another_revision_is_reported_different(space, tmp_path):
    second = push_policy(space.arena.api, "alice/gatherer", EXAMPLES / "wanderer")  # a real later commit, another policy
    assert second != space.first
    slot = space.pvp.team("alice/gatherer").slot

    def other_revision(record):
        record["teams"][slot]["revision"] = second

    data = record_copy(space, tmp_path, space.pvp.match_id, other_revision)
    code, out, err = rerun_cli(space.pvp.match_id, data, "--hub", space.arena.api.endpoint)
    assert code == 1, err
    assert out["identical"] is False
    assert out["difference"]["path"].startswith("teams[") and out["difference"]["path"] != "match_id", out["difference"]
    assert out["difference"]["recorded"] != out["difference"]["rerun"]
    assert out["derived_match_id"] != space.pvp.match_id  # the record no longer names what was played
    assert f"Fetched alice/gatherer@{second[:12]}" in err and "Verdict: DIFFERENT: first at teams[" in err


def test_other_versions_are_refused_naming_both_and_what_to_install(space, tmp_path):
    def older(record):
        record["nmmo_version"], record["arena_version"] = "2.0.0", "0.1.0"

    data = record_copy(space, tmp_path, space.pvp.match_id, older)
    code, out, err = rerun_cli(space.pvp.match_id, data)
    assert code == 2
    assert out == {"match_id": space.pvp.match_id, "identical": None, "error": out["error"]}
    assert f"recorded with nmmo 2.0.0 and Arena 0.1.0; this installation has nmmo {NMMO} and Arena {ARENA_VERSION}" in err
    assert "pip install nmmo==2.0.0" in err and 'ARENA_VERSION = "0.1.0"' in err


def test_a_held_out_match_without_the_spaces_secret_is_refused(space, tmp_path):
    data = record_copy(space, tmp_path, space.pvp.match_id, lambda record: None, secret=False)
    code, out, err = rerun_cli(space.pvp.match_id, data, "--hub", space.arena.api.endpoint)
    assert code == 2 and out["identical"] is None
    assert "held-out map" in err and "NMMO_ARENA_MAP_SECRET" in err and not (data / "map-secret").exists()


def test_an_unknown_match_id_is_refused(space):
    code, out, err = rerun_cli("0123456789abcdef0123", space.settings.data_dir)
    assert code == 2 and out["identical"] is None
    assert "Match '0123456789abcdef0123' is not in the history of" in err and "Matches tab" in err


def test_the_idle_matchmaker_audits_one_match_at_a_time_and_the_about_tab_says_so(space):
    m = space.arena.matchmaker
    assert m.idle()
    first = m.audit()
    assert first is not None and first.identical and first.difference is None, first
    assert first.nmmo_version == NMMO and first.arena_version == ARENA_VERSION
    assert m.audit() is None  # the next is due in a minute (NMMO_ARENA_AUDIT_MINUTES=1)
    summary = m.audit_summary()
    assert summary.line == "1 of 1 audited matches reproduced" and summary.other_version == 0
    assert "**1 of 1 audited matches reproduced**" in audit_markdown(summary, space.settings)
    second = m.audit(now=time.time() + 61)
    assert second is not None and second.match_id != first.match_id  # not audited twice
    assert [a.match_id for a in AuditLog(space.settings.audit_log).read()] == [first.match_id, second.match_id]
    assert m.audit_summary().line == "2 of 2 audited matches reproduced"
    assert space.settings.audit_log.relative_to(space.settings.history_dir).as_posix() == "audits/audits.jsonl"


def test_a_validation_match_reruns_identical_too(space):
    """The two-team, 16-tick match that judged the revision is as reproducible as any other."""
    code, out, err = rerun_cli(space.validation.match_id, space.settings.data_dir)
    assert code == 0, err
    assert out["identical"] is True and out["derived_match_id"] == space.validation.match_id
    assert out["recorded"]["track"] == "validation" and len(out["recorded"]["teams"]) == 2


def test_with_the_space_stopped_the_embedded_hub_is_started_for_the_rerun(space):
    space.arena.stop()
    space.running = False
    assert not (space.settings.data_dir / "local-hub.json").exists()
    code, out, err = rerun_cli(space.pve.match_id, space.settings.data_dir)
    assert code == 0, err
    assert out["identical"] is True and "started for this rerun: no Space is running on it" in out["hub"]


# -- without a match -------------------------------------------------------------------

def _result(match_id: str, *, policy: str = "builtin:forage", revision: str = "builtin", nmmo: str = NMMO,
            arena: str = ARENA_VERSION, track: str = "pvp") -> MatchResult:
    tasks = {t: TaskResult(0, 0) for t in ("travel", "forage", "equipment", "eliminate")}
    teams = tuple(TeamResult(slot=i, policy_id=policy if i == 0 else "builtin:random", revision=revision if i == 0 else "builtin",
                             achievement=0, rank=1, tasks=tasks, alive=8, player_kills=0, deaths=0) for i in range(16))
    return MatchResult(match_id=match_id, seed=1, map_id=1, horizon=8, ticks=8, nmmo_version=nmmo, arena_version=arena,
                       started_at="2026-01-01T00:00:00+00:00", duration_s=1.0, teams=teams, track=track)


def test_the_first_difference_is_named_by_its_path():
    a, b = _result("m").outcome(), _result("m").outcome()
    assert first_difference(a, b) is None
    b["teams"][3]["achievement"] = 4
    b["teams"][5]["rank"] = 2
    assert first_difference(a, b) == {"path": "teams[3].achievement", "recorded": 0, "rerun": 4}
    b["teams"][3]["tasks"]["forage"]["value"] = 9
    assert first_difference(a, b)["path"] == "teams[3].achievement"  # record order: achievement before tasks
    assert first_difference({"t": [1, 2]}, {"t": [1]}) == {"path": "t[1]", "recorded": 2, "rerun": None}


def test_a_local_policy_cannot_be_rerun():
    record = _result("m", policy="local:my-team", revision="abc")
    with pytest.raises(NotReproducibleError, match="local:my-team, a folder on the machine that played it"):
        spec_for(record, fetch=lambda *_: pytest.fail("nothing to fetch"), settings=ArenaSettings())


def test_the_audit_samples_each_match_once_in_a_fixed_order_and_counts_other_versions():
    history = [_result(f"m{i}") for i in range(6)] + [_result("old", nmmo="2.0.0"), _result("local", track="local")]
    picked = []
    while (r := next_to_audit(history, picked, nmmo_version=NMMO, arena_version=ARENA_VERSION)) is not None:
        picked.append(r.match_id)
    assert sorted(picked) == [f"m{i}" for i in range(6)]  # never the other version's, never the evaluation tool's
    again = []
    while (r := next_to_audit(list(reversed(history)), again, nmmo_version=NMMO, arena_version=ARENA_VERSION)) is not None:
        again.append(r.match_id)
    assert again == picked  # a fixed order, whatever the history's
    assert picked != [f"m{i}" for i in range(6)]  # spread over the history, not its oldest first
    audits = [Audit("m0", True, None, "2026-01-01T00:00:00+00:00", NMMO, ARENA_VERSION, 1.0, "pvp"),
              Audit("m1", False, {"path": "teams[2].achievement", "recorded": 10, "rerun": 4}, "2026-01-01T01:00:00+00:00",
                    NMMO, ARENA_VERSION, 1.0, "pve")]
    summary = summarize(audits, other_version=other_versions(history, nmmo_version=NMMO, arena_version=ARENA_VERSION))
    assert (summary.audited, summary.reproduced, summary.other_version) == (2, 1, 1)
    text = audit_markdown(summary, ArenaSettings())
    assert "**1 of 2 audited matches reproduced**; 1 not audited: other version." in text
    assert "`m1` (pve, audited 2026-01-01T01:00:00+00:00): first difference at `teams[2].achievement`, recorded `10`, rerun `4`" in text
    assert "does not audit itself" in audit_markdown(summary, ArenaSettings(audit_minutes=0))


def test_the_audit_log_survives_a_torn_line(tmp_path):
    log = AuditLog(tmp_path / "audits" / "audits.jsonl")
    one = Audit("m0", True, None, "2026-01-01T00:00:00+00:00", NMMO, ARENA_VERSION, 1.0, "pvp")
    log.append(one)
    with open(log.path, "ab") as f:
        f.write(b'{"match_id": "m1", "ident')  # a crash mid-line
    log.append(Audit("m2", True, None, "2026-01-01T00:00:00+00:00", NMMO, ARENA_VERSION, 1.0, "pve"))
    assert [a.match_id for a in log.read()] == ["m0", "m2"] and log.read()[0] == one


def test_the_about_tab_shows_the_tally_computed_at_page_load(tmp_path):
    from history.statuses import StatusLog
    from history.store import HistoryStore
    from leaderboard.pages import build
    from leaderboard.refresher import StandingsRefresher

    data = StandingsRefresher(HistoryStore(tmp_path / "history"), statuses=StatusLog(tmp_path / "s.jsonl").states,
                              hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    tallies = iter([summarize([], other_version=0),
                    summarize([Audit("m0", True, None, "2026-01-01T00:00:00+00:00", NMMO, ARENA_VERSION, 1.0, "pvp")],
                              other_version=0)])
    demo = build(data, ArenaSettings(), audits=lambda: next(tallies))
    load = next(f for f in demo.fns.values() if any(getattr(o, "elem_id", None) == "about-audits" for o in f.outputs))
    at = [getattr(o, "elem_id", None) for o in load.outputs].index("about-audits")
    assert "**0 of 0 audited matches reproduced**" in load.fn("", None)[at]  # a page load
    assert "**1 of 1 audited matches reproduced**" in load.fn("", None)[at]  # the next one shows the tally as it is then
