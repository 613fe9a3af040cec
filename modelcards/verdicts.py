"""Every verdict on the researcher's own repo: one discussion per revision, on the Hub.

At each verdict of a revision (`VERDICTS`: rejected, evaluated, qualified, withdrawn,
error) the Arena opens, or comments on, one discussion on the submitter's repo, titled
"NMMO Arena: revision <sha7>": the verdict, the reason and what to do, its figures, the
team's log from its match (the validation match for a rejection, its latest PvE match
otherwise) and links to those matches' replays on the Space (`?match=ID`). A researcher
hears of their submission where they work, as Kaggle and AIcrowd tell theirs.

Exactly once, across restarts and two writers:

1. the ledger (`modelcards/verdicts-<writer>.jsonl` in the history dataset, every
   writer's files read together, `history.journal`) records each (revision, verdict)
   posted, so a Space restarted on an empty disk posts nothing twice;
2. before posting, the Hub is asked: the revision's discussion by the Space's account is
   found by its title, and its comments are read; a verdict whose marker
   (`<!-- nmmo-arena:verdict SHA STATUS -->`) is already there (posted, then the Space
   died before its ledger line) is recorded, not posted again;
3. only the leading writer posts (`leads`), as only it records verdicts.

A later verdict of the same status (a later PvE stage's figures of a qualified revision)
is not a new verdict. Failures (Hub unreachable, discussions disabled on the repo) are
logged once per repo and tried again after a minute, doubling to an hour; nothing here
ever raises into the Space.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi

from arena.lifecycle import RevisionState, Status
from arena.links import match_link
from arena.logs import TeamLog
from arena.revision import Revision, is_builtin
from history.journal import Journal
from leaderboard.standings import Standings
from modelcards.rounds import account, in_background, next_wait

log = logging.getLogger(__name__)

#: The statuses that are a verdict the submitter is told of.
VERDICTS = (Status.REJECTED, Status.EVALUATED, Status.QUALIFIED, Status.WITHDRAWN, Status.ERROR)

#: Lines of the team's log a discussion quotes (the whole log is a link away).
LOG_LINES = 30

_ADVICE = {
    Status.REJECTED: "Fix what the reason says, check it on your machine with `python -m matchmaking.evaluate FOLDER` "
                     "(it validates as the Arena does), and push a new commit: it is validated again.",
    Status.EVALUATED: "It plays no PvP: its mean Achievement in PvE stage 1 is below the bar. "
                      "`python -m matchmaking.evaluate FOLDER` says how far it is from it; push a new commit to try again.",
    Status.QUALIFIED: "It plays PvP now: its rating and rank are on the Space's PvP leaderboard, and its results come "
                      "to this model card in a pull request.",
    Status.WITHDRAWN: "It left every pool and queue; its matches and figures stay in the history. Submit again with the "
                      "tag to take part.",
    Status.ERROR: "The reason says what failed; push a new commit once it is fixed.",
}


def title(revision: Revision) -> str:
    """The title of a revision's discussion (how the Arena finds its own)."""
    return f"NMMO Arena: revision {revision.sha[:7]}"


def marker(revision: Revision, status: Status) -> str:
    """The hidden line that marks a verdict posted in a discussion."""
    return f"<!-- nmmo-arena:verdict {revision.sha} {status.value} -->"


@dataclass(frozen=True)
class Evidence:
    """A revision's matches the discussion points to: its validation match, its latest PvE
    matches (newest first), and the team's log from the first of them that has one."""

    validation: str | None
    pve: tuple[str, ...]
    log: TeamLog | None = None
    log_match: str | None = None


def evidence(standings: Standings, revision: Revision, logs: Callable[[str], list[TeamLog] | None]) -> Evidence:
    """The matches of `revision` the history holds, and its team's log (validation match
    for a rejection or an error, its newest PvE match otherwise)."""
    mine = standings.teams.where(lambda chunk: (chunk["player"] == revision.player).to_numpy())
    if not len(mine):
        return Evidence(None, ())
    mine = mine.sort_values("started_at", ascending=False)
    validation = next(iter(mine.loc[mine["track"] == "validation", "match_id"]), None)
    pve = tuple(mine.loc[mine["track"] == "pve", "match_id"].head(3))
    for match_id in (*pve[:1], validation) if pve else (validation,):
        if match_id is None:
            continue
        team = next((t for t in logs(match_id) or () if t.policy_id == revision.policy_id), None)
        if team is not None:
            return Evidence(validation, pve, team, match_id)
    return Evidence(validation, pve)


def body(state: RevisionState, found: Evidence, *, space_url: str, qualify: float) -> str:
    """The discussion text of `state`'s verdict, in Markdown."""
    rev, status = state.id, state.status
    lines = [marker(rev, status), f"**NMMO Arena: revision `{rev.sha[:7]}` is {status.value}.**", "",
             state.reason, "", _ADVICE[status].replace("the bar", f"the {qualify:g} that qualifies"), ""]
    figures = []
    m = state.measurements
    if m is not None and m.median_step_ms:
        figures.append(f"| Time per tick (validation) | {m.median_step_ms:.1f} ms median, {m.p99_step_ms:.1f} ms 99th percentile |")
        figures.append(f"| Peak memory (validation) | {m.peak_memory_mb:.0f} MB beyond the preloaded frameworks |")
    for stage in state.pve:
        figures.append(f"| PvE stage {stage.stage} | Top1Ratio {stage.top1_ratio:.2f}, mean Achievement "
                       f"{stage.mean_achievement:.1f} over {stage.matches} matches |")
    if figures:
        lines += ["| Figure | Value |", "|---|---|", *figures, ""]
    links = []
    if found.validation:
        links.append(f"[its validation match]({match_link(space_url, found.validation)})")
    links += [f"[PvE match `{m}`]({match_link(space_url, m)})" for m in found.pve]
    if links:
        lines += ["Replays: " + ", ".join(links) + ". Any of them plays again on your machine: "
                  "`python -m matchmaking.rerun MATCH_ID`.", ""]
    if found.log is not None and found.log.lines:
        text = [f"[tick {line.tick} {line.stream}] {line.text}".rstrip() for line in found.log.lines[:LOG_LINES]]
        more = len(found.log.lines) - len(text)
        what = f"What your team printed in match `{found.log_match}`" + (f" (the first {LOG_LINES} lines; {more} more "
                                                                         "in the Replay tab)" if more > 0 else "")
        lines += [what + ":", "", "```text", *(t.replace("```", "'''") for t in text), "```", ""]
    lines.append(f"*Posted by the NMMO Arena ({space_url}); one comment per verdict of this revision.*")
    return "\n".join(lines)


class VerdictLedger:
    """Which verdicts were posted, in every writer's JSON lines beside `path`."""

    def __init__(self, path: Path, *, writer: str | None = None):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(Path(path), writer=writer, order=lambda e: float(e.get("at", 0.0)))
        self._lock = threading.Lock()

    def posted(self) -> dict[tuple[Revision, str], int]:
        """(revision, status) -> the discussion it was posted in."""
        seen: dict[tuple[Revision, str], int] = {}
        for entry in self.journal.read():
            try:
                seen[(Revision(str(entry["repo_id"]), str(entry["revision"])), str(entry["status"]))] = int(entry["num"])
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("verdict ledger: an entry was skipped (%s: %s)", type(exc).__name__, exc)
        return seen

    def record(self, revision: Revision, status: Status, num: int, *, how: str) -> None:
        with self._lock:
            self.journal.append({"repo_id": revision.policy_id, "revision": revision.sha, "status": status.value,
                                 "num": num, "how": how, "at": time.time()})


def due(states: Iterable[RevisionState], posted: Iterable[tuple[Revision, str]]) -> list[RevisionState]:
    """The verdicts not posted yet: Hub submissions' revisions whose status is a verdict."""
    done = set(posted)
    return [s for s in states if s.status in VERDICTS and not is_builtin(s.id.policy_id)
            and (s.id, s.status.value) not in done]


@dataclass(frozen=True)
class Posted:
    """What one verdict did: `opened` a discussion, `commented` on it, found it `already`
    there, or `failed`."""

    id: Revision
    status: Status
    action: str
    num: int | None = None
    detail: str = ""


class VerdictPoster:
    """Posts due verdicts for one Space: its Hub client, statuses, standings and ledger.

    Args:
        api: the Space's Hub client (its account posts).
        statuses: the revisions' states, now.
        standings: the latest standings (the matches the links point to).
        logs: a match's team logs from the history (`HistoryStore.logs`).
        ledger: what was posted.
        space_url: the Space's address, for the replay links.
        qualify: the PvP bar (mean Achievement in stage 1).
        leads: whether this Space leads the dataset's writers (only then does it post).
    """

    def __init__(self, *, api: HfApi, statuses: Callable[[], Iterable[RevisionState]],
                 standings: Callable[[], Standings], logs: Callable[[str], list[TeamLog] | None],
                 ledger: VerdictLedger, space_url: str, qualify: float = 25.0, leads: Callable[[], bool] | None = None):
        self.api, self.statuses, self.standings, self.logs = api, statuses, standings, logs
        self.ledger, self.space_url, self.qualify, self.leads = ledger, space_url, qualify, leads
        self._failing: dict[str, tuple[float, float]] = {}
        """repo -> (retry not before (monotonic), current wait)"""
        self._me: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def run_once(self) -> list[Posted]:
        """Post every verdict due now; what each did."""
        with self._lock:
            done = []
            for state in due(self.statuses(), self.ledger.posted()):
                waiting = self._failing.get(state.id.policy_id)
                if waiting is not None and time.monotonic() < waiting[0]:
                    continue
                try:
                    done.append(self._post(state))
                    self._failing.pop(state.id.policy_id, None)
                except Exception as exc:  # noqa: BLE001 - logged, retried later; never raised into the Space
                    done.append(self._failed(state, exc))
            return done

    def _post(self, state: RevisionState) -> Posted:
        rev, status = state.id, state.status
        mark = marker(rev, status)
        discussion = self._discussion(rev)
        if discussion is not None:
            details = self.api.get_discussion_details(rev.policy_id, discussion)
            if any(mark in (getattr(event, "content", "") or "") for event in details.events):
                self.ledger.record(rev, status, discussion, how="found on the Hub")
                return Posted(rev, status, "already", discussion)
        text = body(state, evidence(self.standings(), rev, self.logs), space_url=self.space_url, qualify=self.qualify)
        if discussion is None:
            made = self.api.create_discussion(rev.policy_id, title=title(rev), description=text)
            self.ledger.record(rev, status, made.num, how="opened")
            log.info("verdict of %s@%s (%s) posted: discussion #%d opened", rev.policy_id, rev.short, status.value, made.num)
            return Posted(rev, status, "opened", made.num)
        self.api.comment_discussion(rev.policy_id, discussion, text)
        self.ledger.record(rev, status, discussion, how="commented")
        log.info("verdict of %s@%s (%s) posted in discussion #%d", rev.policy_id, rev.short, status.value, discussion)
        return Posted(rev, status, "commented", discussion)

    def _discussion(self, rev: Revision) -> int | None:
        """The number of the revision's discussion by the Space's account (None: none yet)."""
        known = [num for (r, _), num in self.ledger.posted().items() if r == rev]
        if known:
            return known[0]
        for discussion in self.api.get_repo_discussions(rev.policy_id, author=self._account(), discussion_type="discussion"):
            if discussion.title == title(rev):
                return discussion.num
        return None

    def _account(self) -> str | None:
        if self._me is None:
            self._me = account(self.api)
        return self._me

    def _failed(self, state: RevisionState, exc: Exception) -> Posted:
        repo = state.id.policy_id
        first = repo not in self._failing
        wait = next_wait(0.0 if first else self._failing[repo][1])
        self._failing[repo] = (time.monotonic() + wait, wait)
        if first:
            log.warning("verdict of %s@%s (%s) could not be posted: %s: %s; trying again in %.0f s", repo, state.id.short,
                        state.status.value, type(exc).__name__, exc, wait)
        return Posted(state.id, state.status, "failed", detail=f"{type(exc).__name__}: {exc}")

    def run_in_background(self, every_s: float = 10.0) -> threading.Thread:
        """Post due verdicts every `every_s` seconds in a daemon thread until `stop()`, while this Space leads."""
        return in_background(self.run_once, every_s=every_s, stop=self._stop, leads=self.leads,
                             name="verdict-discussions")

    def stop(self) -> None:
        self._stop.set()
