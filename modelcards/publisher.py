"""Publishing results to model cards on the Hub: one pull request per repo, in the background.

The Hub side of `modelcards`: every round (`run_once`, every minute in the Space) asks
`modelcards.publications.due` what to publish and, for each publication:

1. reads the revision's card (`model_info(revision).card_data`): if it opts out
   (`nmmo_arena: {model_index: false}`), records the revision as declined and stops;
2. finds the Arena's pull request on the repo: the one the ledger names, checked on the
   Hub (`get_discussion_details`). **Merged** by the owner: recorded, and this
   publication opens a new one (a publication is only due when the results changed
   since the last one). **Closed** by the owner: recorded as the owner declining the
   revision whose results it carried (logged); that revision is never published again,
   a newer revision of the repo is. Without a pull request in the ledger (a lost
   record), an open one of the Space's account with the Arena's title is found with
   `get_repo_discussions` and reused;
3. writes the card: the README at `refs/pr/N` (or main, for a new pull request) with the
   Arena's `model-index` results replaced (`modelcards.card.with_results`); a card that
   already carries them is not committed again;
4. commits it, with the same figures in the Hub's `.eval_results/` format beside it
   (`modelcards.card.EVAL_RESULTS_PATH`): `create_commit(create_pr=True)` opens the pull request, a commit to
   `refs/pr/N` updates it (plus a comment saying what changed, which notifies the owner);
5. records the publication in the ledger.

Why not `huggingface_hub.metadata_update(create_pr=True)`: it has no endpoint argument
(it reads and writes through the process-wide default Hub, not the Space's `HfApi`) and
it reads main's card even when writing to `refs/pr/N`; this module does the same steps
with the Space's own client, and leaves the YAML to `ModelCard` and `EvalResult`.

Failures (Hub unreachable, permission refused, a broken card) are logged once per repo,
naming what to do, and the repo is tried again later (after 1 minute, doubling to an
hour); nothing here ever raises into the Space.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

from arena.errors import CardMetadataError, HubAnswerError
from arena.lifecycle import RevisionState
from arena.links import policy_link
from arena.revision import Revision
from leaderboard.standings import Standings
from modelcards.card import (
    EVAL_RESULTS_PATH,
    arena_results,
    description,
    eval_result_entries,
    eval_results,
    eval_results_file,
    opted_out,
    with_results,
)
from modelcards.ledger import PublicationLedger, PullRequest
from modelcards.publications import Publication, PublishRule, due
from modelcards.rounds import account, in_background, next_wait

log = logging.getLogger(__name__)

#: The title of the Arena's pull requests (how it recognises its own on a repo).
PR_TITLE = "Add NMMO Arena results to the model card (model-index)"


@dataclass(frozen=True)
class Outcome:
    """What one publication did: `opened`, `updated`, `unchanged` (the card already had
    these results), `declined` (opted out or closed by the owner), or `failed`."""

    id: Revision
    action: str
    detail: str = ""
    pr_num: int | None = None


class ModelCardPublisher:
    """Publishes due results for one Space: its Hub client, standings, statuses and ledger.

    Example:
        >>> publisher = ModelCardPublisher(api=api, standings=refresher.standings,  # doctest: +SKIP
        ...     statuses=statuses.states, ledger=PublicationLedger(path), dataset="nmmo-arena/match-history")
        >>> publisher.run_in_background(every_s=60)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        api: HfApi,
        standings: Callable[[], Standings],
        statuses: Callable[[], Iterable[RevisionState]],
        ledger: PublicationLedger,
        dataset: str,
        rule: PublishRule | None = None,
        clock: Callable[[], float] = time.time,
        leads: Callable[[], bool] | None = None,
        space_url: str | None = None,
    ):
        self.api = api
        self.space_url = space_url
        """The Arena's public address: the `.eval_results/` entries link the revision's page
        there (`arena.links.policy_link`); None: they link the history dataset."""
        self.standings = standings
        self.statuses = statuses
        self.ledger = ledger
        self.dataset = dataset
        self.dataset_url = f"{api.endpoint.rstrip('/')}/datasets/{dataset}"
        self.rule = rule or PublishRule()
        self.clock = clock
        self.leads = leads
        """Whether this Space leads the dataset's writers (`history.writers`): the scheduled
        rounds publish only then, so two Spaces never open two pull requests."""
        self._failing: dict[str, tuple[str, float, float]] = {}
        """repo -> (message logged, retry not before (monotonic), current wait)"""
        self._me: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # -- one round -------------------------------------------------------------------------
    def run_once(self) -> list[Outcome]:
        """Publish everything due now; returns what each publication did. Nothing while the
        standings' whole-history columns are being computed (`Standings.fitting`): a card
        then would lack its MLE rating, and be corrected by another pull request a minute on."""
        standings = self.standings()
        if standings.fitting:
            return []
        with self._lock:
            state = self.ledger.state
            todo = due(standings, self.statuses(), published=state.published, declined=state.declined,
                       rule=self.rule, now=self.clock())
            outcomes = []
            for publication in todo:
                repo_id = publication.results.id.policy_id
                waiting = self._failing.get(repo_id)
                if waiting is not None and time.monotonic() < waiting[1]:
                    continue
                try:
                    outcome = self._publish(publication)
                except Exception as exc:  # noqa: BLE001 - logged once per repo, retried later; never raised into the Space
                    outcome = self._failed(publication, exc)
                else:
                    if repo_id in self._failing:
                        del self._failing[repo_id]
                        log.info("model card of %s: publishing works again", repo_id)
                outcomes.append(outcome)
            return outcomes

    def _publish(self, publication: Publication) -> Outcome:
        results = publication.results
        repo_id, revision = results.id.policy_id, results.id.sha
        card_data = self.api.model_info(repo_id, revision=revision).card_data
        if opted_out(card_data.to_dict() if card_data is not None else None):
            reason = "its card opts out (nmmo_arena: {model_index: false})"
            self.ledger.declined(results.id, reason=reason)
            log.info("model card of %s@%s: not published: %s", repo_id, revision[:7], reason)
            return Outcome(results.id, "declined", reason)

        pr = self._pull_request(repo_id)
        if results.id in self.ledger.state.declined:  # the owner closed it while it carried this revision
            return Outcome(results.id, "declined", self.ledger.state.declined[results.id])

        base = f"refs/pr/{pr.num}" if pr is not None else None
        current = self._readme(repo_id, base)
        model_name = repo_id.split("/")[1]
        card = with_results(current, eval_results(results, dataset=self.dataset, dataset_url=self.dataset_url),
                            dataset=self.dataset, model_name=model_name)
        source = policy_link(self.space_url, repo_id, revision) if self.space_url else self.dataset_url
        entries = eval_results_file(eval_result_entries(results, dataset=self.dataset, source_url=source))
        if pr is not None and _same_results(current, card, self.dataset) and \
                self._file(repo_id, base, EVAL_RESULTS_PATH) == entries:
            self.ledger.published(results, pr=PullRequest(pr.num, pr.url, revision), reason=publication.reason, at=self.clock())
            return Outcome(results.id, "unchanged", publication.reason, pr.num)

        body = description(results, publication.reason, dataset=self.dataset, dataset_url=self.dataset_url)
        operations = [CommitOperationAdd("README.md", card.encode())]
        if entries:
            operations.append(CommitOperationAdd(EVAL_RESULTS_PATH, entries.encode()))
        if pr is None:
            info = self.api.create_commit(repo_id, operations=operations, commit_message=PR_TITLE,
                                          commit_description=body, create_pr=True)
            if info.pr_num is None:
                raise HubAnswerError(f"the Hub opened no pull request on {repo_id} (create_pr=True answered without one)")
            pr = PullRequest(int(info.pr_num), str(info.pr_url), revision)
            action = "opened"
        else:
            self.api.create_commit(repo_id, operations=operations, revision=f"refs/pr/{pr.num}",
                                   commit_message=f"NMMO Arena results of {revision[:7]}: {publication.reason}",
                                   commit_description=body)
            self.api.comment_discussion(repo_id, pr.num, f"Updated: {publication.reason}.\n\n{body}")
            pr = PullRequest(pr.num, pr.url, revision)
            action = "updated"
        self.ledger.published(results, pr=pr, reason=publication.reason, at=self.clock())
        log.info("model card of %s@%s: pull request #%d %s (%s)", repo_id, revision[:7], pr.num, action, publication.reason)
        return Outcome(results.id, action, publication.reason, pr.num)

    # -- the pull request --------------------------------------------------------------------
    def _pull_request(self, repo_id: str) -> PullRequest | None:
        """The Arena's open pull request on the repo, after recording what the owner did
        with the one the ledger knows (merged, closed)."""
        known = self.ledger.state.pull_requests.get(repo_id)
        if known is not None:
            details = self.api.get_discussion_details(repo_id, known.num)
            if details.status in ("open", "draft"):
                return known
            if details.status == "merged":
                self.ledger.merged(repo_id, known)
                log.info("model card of %s: the owner merged pull request #%d; new results go to a new one", repo_id, known.num)
            else:
                reason = f"the owner closed pull request #{known.num} carrying its results"
                self.ledger.declined(Revision(repo_id, known.revision), reason=reason, pr_num=known.num)
                log.info("model card of %s@%s: %s; treated as opting out for that revision (a newer one is published again)",
                         repo_id, known.revision[:7], reason)
            return None
        for discussion in self.api.get_repo_discussions(repo_id, author=self._account(), discussion_type="pull_request",
                                                        discussion_status="open"):
            if discussion.title == PR_TITLE:
                return PullRequest(discussion.num, discussion.url, "")
        return None

    def _account(self) -> str | None:
        """The Space's account name on the Hub (None if the token cannot say: then any
        author's pull request with the Arena's title is taken as the Arena's)."""
        if self._me is None:
            self._me = account(self.api)
        return self._me

    def _readme(self, repo_id: str, revision: str | None) -> str:
        """The card's text at `revision` ("" for a repo without a card)."""
        return self._file(repo_id, revision, "README.md")

    def _file(self, repo_id: str, revision: str | None, path_in_repo: str) -> str:
        """A text file of the repo at `revision` ("" where it has none)."""
        with tempfile.TemporaryDirectory() as folder:  # a fresh read, never a stale cached copy
            try:
                path = self.api.hf_hub_download(repo_id, path_in_repo, revision=revision, local_dir=folder)
            except EntryNotFoundError:
                return ""
            with open(path, encoding="utf-8-sig", newline="") as f:
                return f.read()

    # -- failures ----------------------------------------------------------------------------
    def _failed(self, publication: Publication, exc: BaseException) -> Outcome:
        repo_id, revision = publication.results.id.policy_id, publication.results.id.sha
        message = _explain(repo_id, exc)
        logged, _, wait = self._failing.get(repo_id, ("", 0.0, 0.0))
        wait = next_wait(wait)
        self._failing[repo_id] = (message, time.monotonic() + wait, wait)
        if message != logged:
            log.warning("model card of %s@%s not published: %s (tried again later)", repo_id, revision[:7], message)
        return Outcome(publication.results.id, "failed", message)

    # -- schedule ----------------------------------------------------------------------------
    def run_in_background(self, every_s: float = 60.0) -> threading.Thread:
        """Run `run_once` every `every_s` seconds in a daemon thread until `stop()`, while this Space leads."""
        return in_background(self.run_once, every_s=every_s, stop=self._stop, leads=self.leads, name="model-cards")

    def stop(self) -> None:
        self._stop.set()


def _same_results(before: str, after: str, dataset: str) -> bool:
    try:
        return arena_results(before, dataset=dataset) == arena_results(after, dataset=dataset)
    except ValueError:
        return False


def _explain(repo_id: str, exc: BaseException) -> str:
    """A failure in words, with what to do."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, HfHubHTTPError) and status in (401, 403):
        return (f"the Hub refused the Space's token ({status}) on {repo_id}: give it the permission to open pull "
                f"requests on repos it does not own (HF_TOKEN), or set NMMO_ARENA_MODEL_CARDS=0 to stop publishing")
    if isinstance(exc, CardMetadataError):
        return str(exc)
    if isinstance(exc, HfHubHTTPError):
        return f"the Hub answered {status}: {exc}"
    return f"{type(exc).__name__}: {exc} (is the Hub reachable?)"

