"""The exposure ledger (`leaderboard.exposure`): what each revision was measured on.

Checked three ways on one history written through the real store (PvE of stages 1 and 2 on
published maps, PvP pools filled by the anchors on held-out maps, a PvP match on a
published map, a schema-version-1 shard without spawns): the Space's ledger against counts
made here straight from the raw shards (pyarrow, one row at a time), against
`examples/recompute_exposure.py` run as anyone would run it, and in a real browser on the
policy page, with data and without, and at the `/exposure` API."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena.rules import stage_opponents
from arena.schema import V1_DEFAULTS, MatchResult, rows
from arena.simulation import play
from history.index import TeamRows, narrow
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard.exposure import (
    SIDES,
    UNKNOWN,
    exposure_frames,
    exposure_json,
    exposure_markdown,
    exposure_totals,
    ledger,
    revision_exposure,
)
from leaderboard.refresher import StandingsRefresher
from tests_support import SCREENSHOTS, TESTS, UI_WAIT_MS, serve_app

SCRIPT = TESTS.parent / "examples" / "recompute_exposure.py"

#: Submissions (policy, revision): one policy with two revisions.
ALICE_1, ALICE_2 = ("alice/team", "a1" * 20), ("alice/team", "a2" * 20)
BOB, CAROL = ("bob/team", "b1" * 20), ("carol/team", "c1" * 20)
SUBMITTED = (ALICE_1, ALICE_2, BOB, CAROL)
ANCHORS = ("builtin:random", "builtin:forage", "builtin:combat")
#: The built-ins of PvE stages 1 and 2.
PVE_BUILTINS = {f"builtin:{name}" for stage in (1, 2) for name in stage_opponents(stage)}
#: Spawn points of a 16-team match: (edge, point along it).
POINTS = [(side, index) for side in range(4) for index in range(4)]


def player(entry: tuple[str, str]) -> str:
    policy, revision = entry
    return policy if policy.startswith("builtin:") else f"{policy}@{revision}"


def match(lineup: list[tuple[str, str]], *, rng, index: int, track: str, stage: int = 0, map_id: int = 1,
          held_out: bool = False, spawns: bool = True) -> MatchResult:
    """One synthetic match of `lineup` (policy, revision) in slot order, its spawns dealt at random."""
    seats = [POINTS[k] for k in rng.permutation(16)] if spawns else None
    played = play([p for p, _ in lineup], list(rng.normal(0, 1, len(lineup))), rng=rng, index=index, track=track,
                  map_id=map_id, spawns=seats)
    teams = tuple(replace(t, revision=r) for t, (_, r) in zip(played.teams, lineup))
    return replace(played, teams=teams, stage=stage, held_out=held_out, match_id=f"exp-{index:05d}")


def history(seed: int = 3) -> tuple[list[MatchResult], list[MatchResult]]:
    """(matches of a version-1 shard, later matches): PvE and PvP, as described above."""
    rng = np.random.default_rng(seed)
    builtins = {s: [(f"builtin:{n}", "builtin") for n in stage_opponents(s)] for s in (1, 2)}
    old, new, index = [], [], 0
    for k, entry in enumerate(SUBMITTED):
        for stage, count in ((1, 4 + k), (2, 2 if k < 2 else 0)):
            for _ in range(count):
                lineup = [entry, *builtins[stage]]
                order = rng.permutation(16)  # the submission's slot varies
                (old if index < 3 else new).append(match([lineup[i] for i in order], rng=rng, index=index, track="pve",
                                                         stage=stage, map_id=int(rng.integers(1, 6)), spawns=index >= 3))
                index += 1
    pools = [SUBMITTED, SUBMITTED[:3], (ALICE_1, BOB, CAROL), SUBMITTED, (ALICE_2, CAROL)] * 2
    for k, pool in enumerate(pools):
        fill = [(ANCHORS[j % 3], "builtin") for j in range(16 - len(pool))]
        lineup = [*pool, *fill]
        order = rng.permutation(16)
        held = k != 3  # one PvP match on a published map
        new.append(match([lineup[i] for i in order], rng=rng, index=index, track="pvp",
                         map_id=int(rng.integers(257, 261)) if held else 7, held_out=held))
        index += 1
    return old, new


def write_v1_shard(store: HistoryStore, results: list[MatchResult]) -> Path:
    """A shard as schema version 1 wrote it: without the set, spawn and held-out columns."""
    records = [{k: v for k, v in row.items() if k not in V1_DEFAULTS} | {"schema_version": 1}
               for r in results for row in rows(r)]
    path = store.data / "teams-20260101T000000000000-00000001.parquet"  # sorts first: written first
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def _refresher(store: HistoryStore, root: Path) -> StandingsRefresher:
    data = StandingsRefresher(store, statuses=StatusLog(root / "s.jsonl").states, hub_url="http://hub.example", bootstrap=20)
    data.refresh()
    return data


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The history in a store (a v1 shard, then two v2 shards) and the Space's standings over it."""
    root = tmp_path_factory.mktemp("exposure")
    store = HistoryStore(root / "history")
    old, new = history()
    write_v1_shard(store, old)
    store.recover()
    for r in new[: len(new) // 2]:
        store.record(r)
    store.flush()
    for r in new[len(new) // 2:]:
        store.record(r)
    store.flush()
    return store, _refresher(store, root), root


# -- counts straight from the raw shards ------------------------------------------------------


def raw_counts(folder: Path) -> dict[str, dict[str, dict]]:
    """Per player and track, counted one row at a time from the parquet files: matches,
    seats, stages, opponents (matches, seats), maps, spawn edges and points, slots."""
    records = [r for path in sorted(folder.rglob("*.parquet")) for r in pq.read_table(path).to_pylist()]
    by_match: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        r["player"] = r["policy_id"] if r["policy_id"].startswith("builtin:") else f"{r['policy_id']}@{r['revision']}"
        by_match[r["match_id"]].append(r)
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for seats in by_match.values():
        for p in {s["player"] for s in seats}:
            mine = [s for s in seats if s["player"] == p]
            first = mine[0]
            c = out[p].setdefault(first["track"], {"matches": 0, "seats": 0, "stages": Counter(), "met": Counter(),
                                                   "faced": Counter(), "maps": Counter(), "sides": Counter(),
                                                   "points": Counter(), "slots": Counter()})
            c["matches"] += 1
            c["seats"] += len(mine)
            if first["track"] == "pve":
                c["stages"][str(first["stage"])] += 1
            c["maps"][(bool(first.get("held_out") or False), first["map_id"])] += 1
            for s in mine:
                side, point = s.get("spawn_side", -1), s.get("spawn_index", -1)
                c["sides"][SIDES[side] if side is not None and side >= 0 else UNKNOWN] += 1
                c["points"][str(point) if point is not None and point >= 0 else UNKNOWN] += 1
                c["slots"][str(s["slot"])] += 1
            for s in seats:
                if s["player"] != p:
                    c["faced"][s["player"]] += 1
            for o in {s["player"] for s in seats} - {p}:
                c["met"][o] += 1
    return out


def test_the_ledger_equals_counts_from_the_raw_shards(space):
    store, data, _ = space
    raw = raw_counts(store.data)
    teams = data.standings().teams
    assert set(raw) == teams.players() == {player(e) for e in SUBMITTED} | PVE_BUILTINS
    for p, tracks in raw.items():
        ledger = revision_exposure(teams, p)
        assert [t.track for t in ledger.tracks] == [t for t in ("pvp", "pve") if t in tracks], p
        for t in ledger.tracks:
            c = tracks[t.track]
            assert (t.matches, t.seats) == (c["matches"], c["seats"]), (p, t.track)
            assert {str(k): v for k, v in t.stages.items()} == dict(c["stages"])
            assert {o.opponent: (o.matches, o.seats) for o in t.opponents} == {o: (c["met"][o], c["faced"][o]) for o in c["met"]}
            assert sum(o.share for o in t.opponents) == pytest.approx(1.0)
            assert {(m.held_out, m.map_id): m.matches for m in t.maps} == dict(c["maps"])
            assert {k: v for k, v in t.sides.items() if v} == dict(c["sides"])
            assert {k: v for k, v in t.points.items() if v} == dict(c["points"])
            assert {str(k): v for k, v in t.slots.items() if v} == dict(c["slots"])
    # the cases the history was built to hold
    alice = revision_exposure(teams, player(ALICE_1))
    pvp, pve = alice.track("pvp"), alice.track("pve")
    assert pvp and pve and pvp.matches == 8 and pve.matches == 6 and dict(pve.stages) == {1: 4, 2: 2}
    assert pvp.published_maps == 1 and pvp.held_out_maps >= 2 and pvp.held_out_matches == 7 and pve.held_out_maps == 0
    assert pve.sides[UNKNOWN] == 3 and pve.distinct_opponents == len(PVE_BUILTINS)
    random = revision_exposure(teams, "builtin:random")
    assert random.seats > random.matches  # a built-in fills several seats of a match
    assert {o.opponent for o in random.track("pvp").opponents} >= {player(e) for e in SUBMITTED}
    assert "builtin:random" not in {o.opponent for o in random.track("pvp").opponents}  # never its own opponent


def test_chunked_rows_give_the_ledger_of_the_whole_frame(space):
    """The standings hold their rows in chunks (strings dictionary-encoded): a ledger
    counted chunk by chunk and combined equals the ledger of the whole frame at once."""
    _, data, _ = space
    whole = data.standings().teams.frame()
    ids = list(dict.fromkeys(whole["match_id"]))
    cuts = [set(ids[:7]), set(ids[7:30]), set(ids[30:])]
    chunks = TeamRows(tuple(narrow(whole[whole["match_id"].isin(c).to_numpy()].astype({"match_id": object, "player": object,
                                                                                       "track": object}))
                            for c in cuts))
    assert len(chunks.chunks) == 3
    plain = whole.astype({c: object for c in whole.columns if isinstance(whole[c].dtype, pd.CategoricalDtype)})
    for p in (player(ALICE_1), player(CAROL), "builtin:random", "builtin:apprentice"):
        assert revision_exposure(chunks, p) == ledger(plain, plain, player=p), p
    assert exposure_totals(chunks) == exposure_totals(plain)


def test_the_totals_of_every_revision_agree_with_the_ledgers(space):
    _, data, _ = space
    teams = data.standings().teams
    totals = exposure_totals(teams)
    assert {t.player for t in totals} == teams.players()
    for t in totals:
        track = revision_exposure(teams, t.player).track(t.track)
        assert track is not None
        assert (t.matches, t.seats, t.published_maps, t.held_out_maps, t.held_out_matches) == (
            track.matches, track.seats, track.published_maps, track.held_out_maps, track.held_out_matches)


def _history_sql(first_line: str) -> str:
    """The SQL block of docs/history.md that begins with `first_line`."""
    import re

    blocks = re.findall(r"```sql\n(.*?)```", (TESTS.parent / "docs" / "history.md").read_text(), re.S)
    [block] = [b for b in blocks if b.startswith(first_line)]
    return block


def _docs_views(store: HistoryStore):
    """DuckDB with the docs' views (their first SQL block), over the shards of `store`."""
    import duckdb  # requirements-dev.txt: the engine of the Hub's SQL console

    db = duckdb.connect()
    db.execute(_history_sql("CREATE VIEW teams").replace("match-history/data", str(store.data)))
    return db


def test_the_docs_sql_recomputes_the_exposure_totals(space):
    """docs/history.md's SQL over the dataset's shards (a version-1 shard among them) gives
    every player's matches, seats and maps per track as the Space counts them."""
    store, data, _ = space
    db = _docs_views(store)
    got = {(r[0], r[1]): tuple(r[2:]) for r in db.execute(_history_sql("-- exposure_totals\n")).fetchall()}
    want = {(t.player, t.track): (t.matches, t.seats, t.published_maps, t.held_out_maps, t.held_out_matches)
            for t in exposure_totals(data.standings().teams)}
    assert got == want and len(got) > 10


def test_the_docs_sql_recomputes_the_pve_figures(space):
    """docs/history.md's SQL gives each submitted revision's PvE figures per stage as the
    matchmaker summarizes them into its verdict (`matchmaking.service.pve.summarize`)."""
    from matchmaking.service.pve import summarize

    store, _, _ = space
    db = _docs_views(store)
    got = {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in db.execute(_history_sql("-- pve_table\n")).fetchall()}
    results = [r for r in store.results() if r.track == "pve"]
    want = {}
    for policy, revision in SUBMITTED:
        for stage in (1, 2):
            played = [r for r in results if r.stage == stage and any(t.revision == revision for t in r.teams)]
            if played:
                summary = summarize(played, policy)
                want[(policy, revision, stage)] = (summary.matches, summary.top1_ratio, summary.mean_achievement)
    assert got.keys() == want.keys() and len(want) == 6
    for key, (matches, top1, mean) in want.items():
        assert got[key][0] == matches and got[key][1] == pytest.approx(top1) and got[key][2] == pytest.approx(mean), key


def test_the_api_answer_names_revisions_policies_and_nothing(space):
    _, data, _ = space
    teams = data.standings().teams
    everyone = exposure_json(teams)
    assert everyone["revisions"] == [] and len(everyone["totals"]) == len(exposure_totals(teams)) and everyone["note"] == ""
    one = exposure_json(teams, player(BOB))
    assert [r["player"] for r in one["revisions"]] == [player(BOB)] and {t["track"] for t in one["totals"]} == {"pvp", "pve"}
    policy = exposure_json(teams, "alice/team")
    assert [r["player"] for r in policy["revisions"]] == [player(ALICE_1), player(ALICE_2)]
    nobody = exposure_json(teams, "nobody/none")
    assert nobody["revisions"] == [] == nobody["totals"] and "nobody/none" in nobody["note"]
    json.dumps(policy)  # JSON-able as it is


def test_the_page_tables_and_line(space):
    _, data, _ = space
    ledger = revision_exposure(data.standings().teams, player(ALICE_1))
    frames = exposure_frames(ledger)
    assert list(frames["tracks"]["Track"]) == ["PvP", "PvE"] and list(frames["tracks"]["Matches"]) == [8, 6]
    assert frames["opponents"].groupby("Track")["Share of opponent seats (%)"].sum().round(0).tolist() == [100.0, 100.0]
    line = exposure_markdown(ledger)
    assert "**8 PvP** matches" in line and "stage 1: 4, stage 2: 2" in line and "Leaderboard Illusion" in line
    nothing = revision_exposure(data.standings().teams, "nobody/none@0")
    assert nothing.tracks == () and all(f.empty for f in exposure_frames(nothing).values())
    assert "No recorded match" in exposure_markdown(nothing)


# -- the script ---------------------------------------------------------------------------------


def load_script():
    spec = importlib.util.spec_from_file_location("recompute_exposure", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    sys.path.insert(0, str(SCRIPT.parent))  # as `python examples/recompute_exposure.py` has it: its sibling
    try:
        spec.loader.exec_module(script)
    finally:
        del sys.modules[spec.name]
        sys.path.remove(str(SCRIPT.parent))
    return script


def test_the_script_recomputes_the_spaces_ledger_from_the_shards(space, tmp_path):
    store, data, _ = space
    out = tmp_path / "ledger.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--data", str(store.root), "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "matches in 3 shards" in done.stdout
    answer = json.loads(out.read_text())
    teams = data.standings().teams
    space_ledgers = {p: revision_exposure(teams, p).to_dict() for p in teams.players()}
    assert {r["player"]: r for r in answer["revisions"]} == space_ledgers
    assert answer["totals"] == [t.to_dict() for t in exposure_totals(teams)]
    one = subprocess.run([sys.executable, str(SCRIPT), "--data", str(store.root), "--revision", "alice/team"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    printed = json.loads(one.stdout.split("\n", 1)[1])
    assert printed == exposure_json(teams, "alice/team")["revisions"]


def test_the_script_differs_when_a_convention_changes(space):
    """A script counting opponents' matches where it should count their seats disagrees:
    the comparison above is not vacuous."""
    store, data, _ = space
    script = load_script()
    frame, _ = script.read_rows(store.root)
    teams = data.standings().teams
    assert script.ledger(frame, "builtin:random") == revision_exposure(teams, "builtin:random").to_dict()
    frame = frame.drop_duplicates(["match_id", "player"])  # one seat per player per match
    assert script.ledger(frame, "builtin:random") != revision_exposure(teams, "builtin:random").to_dict()


# -- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(space):
    store, data, _ = space
    demo, url = serve_app(data)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("exposure-empty")
    demo, url = serve_app(_refresher(HistoryStore(root / "history"), root))
    yield url
    demo.close()


def _policy_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.get_by_role("tab", name="Policy").click()
    return context, page, errors


def _cells(page, elem_id: str) -> list[str]:
    """A table's cells as shown, row after row (a `Dataframe`'s or a Markdown table's)."""
    return page.locator(f"#{elem_id} [role=gridcell], #{elem_id} td").all_inner_texts()


@pytest.mark.browser
def test_the_policy_page_shows_the_ledger(browser, app):
    context, page, errors = _policy_page(browser, app)
    choice = page.locator("#policy-choice input").first
    page.wait_for_function("e => e.value !== ''", arg=choice.element_handle(), timeout=UI_WAIT_MS)  # filled at page load
    note = page.locator("#policy-exposure-note")
    note.get_by_text("Ratings and means rest on").wait_for(timeout=UI_WAIT_MS)  # the ledger of the policy it opened on
    choice.click()
    choice.fill(player(ALICE_1))
    choice.press("Enter")
    note.get_by_text(f"{player(ALICE_1)} played").wait_for(timeout=UI_WAIT_MS)
    assert "8 PvP" in note.inner_text() and "stage 1: 4, stage 2: 2" in note.inner_text()
    page.locator("#policy-exposure").get_by_role("cell", name="PvE", exact=True).first.wait_for(timeout=UI_WAIT_MS)
    tracks = _cells(page, "policy-exposure")
    pve = tracks.index("PvE")
    assert tracks[pve:pve + 2] == ["PvE", "6"] and tracks[pve - 8:pve - 6] == ["PvP", "8"], tracks
    page.locator("#policy-opponents-table").get_by_role("gridcell", name=player(BOB)).first.wait_for(timeout=UI_WAIT_MS)
    opponents = _cells(page, "policy-opponents-table")
    bob = opponents.index(player(BOB))
    assert opponents[bob - 1:bob + 3] == ["PvP", player(BOB), "8", "8"], opponents
    seats = _cells(page, "policy-exposure-seats")
    pvp_row, pve_row = seats[:9], seats[seats.index("PvE"):][:9]  # Track, Seats, 4 edges, not recorded, slots
    assert pvp_row[:2] == ["PvP", "8"] and pvp_row[6] == "0" and sum(int(c) for c in pvp_row[2:6]) == 8, seats
    assert pve_row[:2] == ["PvE", "6"] and pve_row[6] == "3" and pve_row[7].endswith("of 16"), seats  # 3 from version 1
    page.locator("#policy-exposure-note").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "policy-exposure.png"), full_page=True)
    assert errors == [], errors
    context.close()


@pytest.mark.browser
def test_the_policy_page_without_data_says_what_will_fill_the_ledger(browser, empty_app):
    context, page, errors = _policy_page(browser, empty_app)
    page.locator("#policy-empty").wait_for(state="visible", timeout=UI_WAIT_MS)
    note = page.locator("#policy-exposure-note")
    note.wait_for(state="visible", timeout=UI_WAIT_MS)
    assert "exposure" in note.inner_text().lower() and len(note.inner_text()) > 60
    for table in ("#policy-exposure", "#policy-exposure-seats", "#policy-opponents-table"):
        assert not page.locator(table).is_visible(), table
    page.screenshot(path=str(SCREENSHOTS / "policy-exposure-empty.png"), full_page=True)
    assert errors == [], errors
    context.close()


@pytest.mark.browser
def test_the_exposure_api(app, empty_app):
    from gradio_client import Client

    answer = Client(app, verbose=False).predict(player(CAROL), api_name="/exposure")
    assert [r["player"] for r in answer["revisions"]] == [player(CAROL)]
    assert answer["revisions"][0]["tracks"][0]["track"] == "pvp"
    everyone = Client(app, verbose=False).predict("", api_name="/exposure")
    assert {t["player"] for t in everyone["totals"]} >= {player(e) for e in SUBMITTED}
    empty = Client(empty_app, verbose=False).predict("", api_name="/exposure")
    assert empty == {"query": "", "revisions": [], "totals": [], "note": "No match recorded yet."}


def test_the_ledger_counts_matches_with_a_teammate(space):
    """`teammate_matches`: this history predates the one-owner-per-pool rule, and its pools
    seat alice's two revisions together 6 times (3 pools of 5, twice); bob never meets a revision of his own."""
    _, data, _ = space
    teams = data.standings().teams
    assert revision_exposure(teams, player(ALICE_1)).track("pvp").teammate_matches == 6
    assert revision_exposure(teams, player(ALICE_2)).track("pvp").teammate_matches == 6
    assert revision_exposure(teams, player(BOB)).track("pvp").teammate_matches == 0
    assert revision_exposure(teams, "builtin:random").track("pvp").teammate_matches == 0  # built-ins have no owner
