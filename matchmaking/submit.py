"""Submit a policy folder to the Arena's Hub: check it as the Arena will, tag it, push it.

Usage::

    python -m matchmaking.submit FOLDER --repo OWNER/NAME [--hub URL] [--data DIR]
                                        [--no-validate] [--message TEXT]
    python -m matchmaking.submit --withdraw OWNER/NAME [--hub URL] [--data DIR]

(`nmmo-arena-submit` once the project is installed with `pip install .`.)

1. **Checks**, in this process and without running the policy: the files that would be
   uploaded (as `upload_folder` lists them) go through discovery's own format and size
   checks (`matchmaking.hub.discovery.format_problem`, `size_problem`), and `policy.py` is
   parsed, not imported, to see that it binds `Team`. Then it plays the Arena's 16-tick
   validation match in its sandbox (`matchmaking.service.validation`), exactly as the Space
   will (`--no-validate` skips it): the policy never runs in this process, and a broken
   helper module, a missing package or malformed actions are found before the push.
2. **The model card**: the submission tag (`NMMO_ARENA_TAG`, `nmmo-arena`) is added to
   `README.md`'s metadata with `huggingface_hub.ModelCard` (its other metadata and its
   text are kept); a folder without a `README.md` gets one.
3. **The push** (`HfApi.create_repo` + `upload_folder`) goes to, first found
   (`matchmaking.hub.connection`, shared with `rerun` and `evaluate --against`):
   `--hub URL`; `NMMO_ARENA_HUB`; `HF_ENDPOINT`, each with the user's own token
   (`HF_TOKEN` or `hf auth login`); else the embedded Hub of a Space running on this
   machine, whose endpoint and token it reads from the Space's data folder
   (`DATA/local-hub.json`, `DATA/local-hub-token`; DATA as the Space resolves it:
   `NMMO_ARENA_DATA`, or `--data`).

It prints the repo's URL, the commit, and where to watch the revision's status. Every
problem a user can fix exits with status 2 and says what to do: no `policy.py`, too
large, a `policy.py` that does not parse, a bad repo id, no Hub, a refused token.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from huggingface_hub import HfApi, ModelCard, ModelCardData, get_token
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, HFValidationError, RepositoryNotFoundError
from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects, validate_repo_id

from arena.errors import HubAuthError, NoHubError, SettingsError, SubmissionCheckError
from arena.policies import POLICY_FILE
from arena.settings import ArenaSettings
from matchmaking.hub.connection import HubTarget, find_hub
from matchmaking.hub.discovery import format_problem, size_problem
from matchmaking.hub.health import answered, describe
from matchmaking.hub.pushing import CARD, IGNORED, push_submission


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matchmaking.submit",
        description="Check a policy folder as the Arena will, add the submission tag to its model card, and push it "
        "to the Arena's Hub (the embedded one of a Space on this machine, or a real one).",
        epilog="Exit status: 0 pushed; 2 something to fix (the message says what); 1 the Hub failed otherwise.",
    )
    parser.add_argument("folder", type=Path, nargs="?", help="the policy folder: policy.py at its root, plus what it loads")
    parser.add_argument("--repo", help="the model repo to push to, OWNER/NAME (created if missing)")
    parser.add_argument("--withdraw", metavar="OWNER/NAME", help="withdraw a submission instead: remove the Arena's tag "
                        "from its model card (one commit); the Arena takes it out of every pool at its next look, and "
                        "its matches stay in the history. Submit again (with the tag) to take part again")
    parser.add_argument("--hub", default=None, help="URL of the Hub (default: NMMO_ARENA_HUB, HF_ENDPOINT, else the "
                        "embedded Hub of the Space whose data folder is NMMO_ARENA_DATA)")
    parser.add_argument("--data", type=Path, default=None, help="the Space's data folder, to find its embedded Hub "
                        "(default: NMMO_ARENA_DATA, as the Space reads it)")
    parser.add_argument("--validate", action=argparse.BooleanOptionalAction, default=True,
                        help="play the Arena's validation match in its sandbox before pushing, as the Space will (the "
                        "default: about 10 s); --no-validate pushes without it")
    parser.add_argument("--message", default=None, help="the commit message (default: 'Submit FOLDER')")
    return parser


# -- checks ------------------------------------------------------------------------------------

def folder_files(folder: Path) -> list[tuple[str, int]]:
    """(path, size) of every file `upload_folder` would upload from `folder`, sorted."""
    every = {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*") if p.is_file()}
    kept = filter_repo_objects(every, ignore_patterns=[*DEFAULT_IGNORE_PATTERNS, *IGNORED])
    return sorted((path, every[path]) for path in kept)


def policy_problem(source: str) -> str:
    """Why `policy.py`'s source cannot be the contract's (a syntax error, no top-level
    `Team`), read without running it; "" if it may be."""
    try:
        tree = ast.parse(source, filename=POLICY_FILE)
    except SyntaxError as exc:
        return f"{POLICY_FILE} does not parse: {exc.msg} (line {exc.lineno}). Fix it; the Arena would reject it the same way."
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return ""  # `from x import *` may bring Team: only running it would tell
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if "Team" not in bound:
        return (f"{POLICY_FILE} defines no top-level `Team`. It must define `class Team` with __init__(self, team_id, "
                "env_config) and act(self, observations) (see 'Writing a policy' in docs/participants.md).")
    return ""


def check_folder(folder: Path, *, max_mb: float) -> list[tuple[str, int]]:
    """The files to upload, once the folder passes the Arena's checks.

    Raises:
        `SubmissionCheckError`: saying what to change.
    """
    if not folder.is_dir():
        raise SubmissionCheckError(f"{folder} is not a folder. Give the folder that holds {POLICY_FILE}.")
    files = folder_files(folder)
    problem = format_problem(files) or size_problem(files, max_mb)
    if not problem:
        problem = policy_problem((folder / POLICY_FILE).read_text(encoding="utf-8", errors="replace"))
    if problem:
        raise SubmissionCheckError(f"{folder}: {problem}")
    return files


def check_repo_id(repo_id: str) -> str:
    """`repo_id` if it is OWNER/NAME as the Hub accepts it.

    Raises:
        `SubmissionCheckError`: naming the id and the expected form.
    """
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise SubmissionCheckError(f"--repo {repo_id!r} is not a repo id the Hub accepts: {exc}") from None
    if repo_id.count("/") != 1:
        raise SubmissionCheckError(f"--repo {repo_id!r} must be OWNER/NAME, e.g. my-user/my-team (the owner is your "
                                   "user or one of your organisations).")
    return repo_id


def tag_card(folder: Path, tag: str) -> bool:
    """Add `tag` to the model card's tags (creating `README.md` if missing), keeping the
    card's other metadata and text. Returns whether the file changed.

    Raises:
        `SubmissionCheckError`: `README.md`'s metadata does not parse.
    """
    path = folder / CARD
    if not path.exists():
        data = ModelCardData(tags=[tag])
        ModelCard(f"---\n{data.to_yaml()}\n---\n\n# {folder.resolve().name}\n\nA Neural MMO team for the NMMO Arena.\n").save(path)
        return True
    try:
        card = ModelCard.load(path)
    except Exception as exc:  # noqa: BLE001 - yaml's and the card's own errors: all mean "fix the front matter"
        raise SubmissionCheckError(f"{path}: its metadata (the YAML between the --- lines) does not parse: "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0]}. Fix it, then submit again.") from None
    tags = card.data.tags or []
    tags = [tags] if isinstance(tags, str) else list(tags)
    if tag in tags:
        return False
    card.data.tags = [*tags, tag]
    card.save(path)
    return True


def push(target: HubTarget, folder: Path, repo_id: str, *, message: str) -> tuple[str, bool]:
    """Create the repo if needed and upload the folder as one commit. Returns the sha of
    the repo's head and whether this push made it (False: nothing had changed, and
    `upload_folder` makes no empty commit).

    Raises:
        `HubAuthError`: the Hub refused the token. `NoHubError`: it does not answer.
    """
    api = _api(target)
    with _hub_errors(target, repo_id):
        try:
            before = api.model_info(repo_id).sha
        except RepositoryNotFoundError:
            before = None
        sha = push_submission(api, repo_id, folder=folder, message=message)
        return sha, sha != before


def withdraw(target: HubTarget, repo_id: str, *, tag: str) -> str | None:
    """Remove `tag` from the repo's model card on the Hub, in one commit: the Arena withdraws
    the submission at its next look (`matchmaking.service.submissions.sync`), its matches kept
    in the history. Returns the commit's sha; None when the card carried no such tag.

    Raises:
        `SubmissionCheckError`: no such repo, or no model card. `HubAuthError`, `NoHubError`: as `push`.
    """
    api = _api(target)
    with _hub_errors(target, repo_id):
        try:
            card = ModelCard.load(api.hf_hub_download(repo_id, CARD))
        except RepositoryNotFoundError:
            raise SubmissionCheckError(f"{target.endpoint} has no repo {repo_id}: check OWNER/NAME.") from None
        except EntryNotFoundError:
            raise SubmissionCheckError(f"{repo_id} has no {CARD}, so no tag: it is not a submission.") from None
        tags = card.data.tags or []
        tags = [tags] if isinstance(tags, str) else list(tags)
        if tag not in tags:
            return None
        card.data.tags = [t for t in tags if t != tag]
        info = api.upload_file(path_or_fileobj=str(card).encode(), path_in_repo=CARD, repo_id=repo_id,
                               commit_message="Withdraw from the NMMO Arena")
        return info.oid


def _api(target: HubTarget) -> HfApi:
    token = target.token if target.token is not None else get_token()
    if token is None:
        raise HubAuthError(f"No token for {target.endpoint}: log in with `hf auth login` or set HF_TOKEN, then try again.")
    return HfApi(endpoint=target.endpoint, token=token)


@contextmanager
def _hub_errors(target: HubTarget, repo_id: str) -> Iterator[None]:
    """The Hub's refusals and silence as the errors a submitter can act on."""
    try:
        yield
    except HfHubHTTPError as exc:
        if exc.response is not None and exc.response.status_code in (401, 403):
            whose = "the embedded Hub's token" if target.token is not None else "your token (HF_TOKEN or `hf auth login`)"
            raise HubAuthError(
                f"{target.endpoint} refused {whose} (HTTP {exc.response.status_code}): {describe(exc)}. Check that it may "
                f"write to {repo_id.split('/')[0]!r} (your user or one of your organisations), or log in again."
            ) from None
        raise
    except Exception as exc:  # noqa: BLE001 - classified: only "no answer at all" is ours to explain
        if answered(exc):
            raise
        raise NoHubError(f"The Hub at {target.endpoint} ({target.how}) does not answer: {describe(exc)}. "
                         "Is the Space running? Start it (`make run`) and submit again.") from None


def watch_hint(target: HubTarget, repo_id: str) -> str:
    """Where the submitter sees what the Arena makes of the push."""
    if target.space_url:
        return (f"Watch its status on the Submissions tab of {target.space_url} (queued within seconds, then the "
                f"validation's verdict), or: python -c \"from gradio_client import Client; "
                f"print(Client('{target.space_url}').predict(api_name='/submissions'))\"")
    return (f"Watch its status on the Arena Space's Submissions tab: {repo_id} appears there once the Space sees the "
            "push (at once if its webhook watches you, else within its polling interval, a minute by default).")


def _validate(folder: Path, ticks: int) -> str:
    """The Arena's validation match, in the sandbox; its reason. Raises if it fails."""
    from arena.policies import local
    from matchmaking.sandbox.host import protect_process
    from matchmaking.service.validation import validate

    protect_process()  # as the Space: the sandboxed team must not read this process's environment
    report = validate(local(folder), ticks=ticks)
    if not report.ok:
        raise SubmissionCheckError(f"{folder}: the validation match rejected it: {report.reason}")
    return report.reason


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.withdraw is None and (args.folder is None or args.repo is None):
        parser.error("give the policy FOLDER and --repo OWNER/NAME to submit (or --withdraw OWNER/NAME)")
    environ = dict(os.environ)
    if args.data is not None:
        environ["NMMO_ARENA_DATA"] = str(args.data)
    if args.withdraw is not None:
        return _withdraw(args, environ)
    try:
        settings = ArenaSettings.from_env(environ)
        repo_id = check_repo_id(args.repo)
        folder: Path = args.folder
        files = check_folder(folder, max_mb=settings.max_submission_mb)
        size_mb = sum(size for _, size in files) / 2**20
        print(f"Checked {folder}: {len(files)} file{'s' if len(files) != 1 else ''}, {size_mb:.2f} MB (limit {settings.max_submission_mb:g} MB), "
              f"{POLICY_FILE} defines Team.")
        if args.validate:
            print(f"Validated in the sandbox: {_validate(folder, settings.validation_ticks)}")
        target = find_hub(settings, hub=args.hub, environ=environ)
        if tag_card(folder, settings.submission_tag):
            print(f"Added the tag {settings.submission_tag!r} to {folder / CARD}.")
        sha, changed = push(target, folder, repo_id, message=args.message or f"Submit {folder.resolve().name}")
    except (SettingsError, SubmissionCheckError, NoHubError, HubAuthError) as exc:
        print(f"Not submitted. {exc}", file=sys.stderr)
        return 2
    except HfHubHTTPError as exc:
        print(f"Not submitted: the Hub failed: {describe(exc)}", file=sys.stderr)
        return 1
    if changed:
        print(f"Pushed {repo_id} to {target.endpoint} ({target.how}).")
    else:
        print(f"Nothing changed since the last push of {repo_id} to {target.endpoint}: the Arena already has this revision.")
    print(f"Repo: {target.endpoint}/{repo_id}")
    print(f"Commit: {sha}")
    print(watch_hint(target, repo_id))
    return 0


def _withdraw(args: argparse.Namespace, environ: dict[str, str]) -> int:
    try:
        settings = ArenaSettings.from_env(environ)
        repo_id = check_repo_id(args.withdraw)
        target = find_hub(settings, hub=args.hub, environ=environ)
        sha = withdraw(target, repo_id, tag=settings.submission_tag)
    except (SettingsError, SubmissionCheckError, NoHubError, HubAuthError) as exc:
        print(f"Not withdrawn. {exc}", file=sys.stderr)
        return 2
    except HfHubHTTPError as exc:
        print(f"Not withdrawn: the Hub failed: {describe(exc)}", file=sys.stderr)
        return 1
    if sha is None:
        print(f"{repo_id}'s card on {target.endpoint} carries no tag {settings.submission_tag!r}: it is not submitted.")
    else:
        print(f"Removed the tag {settings.submission_tag!r} from {repo_id}'s card (commit {sha}): the Arena withdraws it "
              "at its next look; its matches stay in the history. Submit again to take part again.")
    print(watch_hint(target, repo_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
