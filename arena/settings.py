"""How a running Space is configured: every setting, its variable, its default, its check.

A Space is configured in its settings page, that is, through environment variables, so
every field of `ArenaSettings` has one (`NMMO_ARENA_...`, listed by `variables()` and in
docs/operators.md). Every value is checked before anything starts: `ArenaSettings.from_env()`
raises one `SettingsError` naming each bad variable, its value and what is accepted, and
an `NMMO_ARENA_...` variable that is no setting at all (a typo) is refused the same way,
so that a Space never runs for hours on a value it silently ignored. An option that was
retired (`RETIRED`, `setting(retired=...)`) is refused with what became of it: a Space
started with it must not run on as if it were still played.

The defaults of the PvE thresholds are the rules' own (`arena.rules.PVE`).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from arena import PROJECT_ROOT
from arena.errors import ArenaError, InvalidArgumentError, SettingsError
from arena.rules import PVE, RETIRED_ON, RETIRED_PAIRINGS, RETIRED_PVP_FORMAT, Pairing

#: Prefix of every variable this module reads.
PREFIX = "NMMO_ARENA_"

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

#: Variables of retired settings, each refused whatever its value, with why it was retired.
RETIRED: dict[str, str] = {f"{PREFIX}PVP_FORMAT": RETIRED_PVP_FORMAT}

#: The modes of `NMMO_ARENA_ISOLATION` (what each does: `matchmaking.sandbox.isolation`).
ISOLATION_MODES: tuple[str, str] = ("strict", "warn")


def default_cache_dir() -> Path:
    """Where generated maps and other rebuildable files go (`NMMO_ARENA_CACHE` overrides)."""
    return Path(os.environ.get(f"{PREFIX}CACHE") or PROJECT_ROOT / ".cache")


# -- parsing and checking one value -----------------------------------------------------

class _Bad(ArenaError, ValueError):
    """A value that does not parse or does not pass its check; the message says what is accepted."""


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise _Bad("an integer") from None


def _number(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise _Bad("a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise _Bad("a finite number")
    return value


def _boolean(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise _Bad("one of 1, 0, true, false, yes, no, on, off")


def _text(text: str) -> str:
    return text.strip()


def _optional(text: str) -> str | None:
    return text.strip() or None


def _path(text: str) -> Path:
    return Path(text.strip()).expanduser()


def _between(low: float, high: float) -> Callable[[Any], str]:
    return lambda v: "" if low <= v <= high else f"a value from {low:g} to {high:g}"


def _at_least(low: float) -> Callable[[Any], str]:
    return lambda v: "" if v >= low else f"a value of at least {low:g}"


def _positive(v: float) -> str:
    return "" if v > 0 else "a positive value"


def _url(v: str | None) -> str:
    return "" if v is None or re.match(r"^https?://[^\s/]+", v) else "an http:// or https:// URL, e.g. https://huggingface.co"


def _ray(v: str | None) -> str:
    if v is None or v in ("auto", "local") or re.match(r"^(ray://)?[^\s:/]+:\d+$", v):
        return ""
    return "auto, local, ray://HOST:PORT or HOST:PORT"


def _repo_id(v: str) -> str:
    return "" if _REPO_ID.match(v) else "a Hub repo id OWNER/NAME"


def _owner(v: str) -> str:
    return "" if _REPO_ID.match(f"{v}/x") else "a Hub user or organisation name"


def _owners(v: str) -> str:
    bad = [o for o in v.split(",") if o.strip() and _owner(o.strip())]
    return "" if not bad else f"comma-separated Hub user or organisation names ({bad[0].strip()!r} is not one)"


def _tag(v: str) -> str:
    return "" if _TAG.match(v) else "a Hub tag: letters, digits and . _ : -"


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    return lambda v: "" if v in choices else "one of " + ", ".join(choices)


def _webhook_secret(v: str | None) -> str:
    if v is None or (v.isascii() and v.isprintable() and " " not in v and len(v) >= 8):
        return ""
    return "at least 8 printable ASCII characters without spaces (the Hub sends it as the X-Webhook-Secret header)"


def _map_secret(v: str | None) -> str:
    if v is None or (v.isascii() and v.isprintable() and len(v) >= 16):
        return ""
    return "at least 16 printable ASCII characters (e.g. the output of `python -c \"import secrets; print(secrets.token_hex(16))\"`)"


def _folder(v: Path) -> str:
    return "" if not v.exists() or v.is_dir() else "a folder (this path is a file)"


def setting(default: Any = None, *, env: str, parse: Callable[[str], Any], check: Callable[[Any], str] | None = None,
            factory: Callable[[], Any] | None = None, doc: str, secret: bool = False,
            retired: Mapping[Any, str] | None = None) -> Any:
    """A field of `ArenaSettings`: its variable (`NMMO_ARENA_` + `env`), parser and check;
    a `secret` one's value is never repeated in a message; `retired` values (value -> why)
    are refused as retired rather than as unknown."""
    metadata = {"env": PREFIX + env, "parse": parse, "check": check, "doc": doc, "secret": secret,
                "retired": dict(retired or {})}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


@dataclass(frozen=True)
class ArenaSettings:
    """How the Space runs: where its Hub and data are, what it accepts, how often it acts.

    Built from the environment by `from_env`; built directly (tests, benchmarks), it is
    checked the same way.

    Raises:
        `SettingsError`: a value is not accepted (every bad one is named at once).
    """

    hub_endpoint: str | None = setting(None, env="HUB", parse=_optional, check=_url,
        doc="URL of the Hub to use; unset starts the embedded Hub on DATA/hub (no account, no network)")
    data_dir: Path = setting(PROJECT_ROOT / "data", env="DATA", parse=_path, check=_folder,
        doc="the Space's own state: the embedded Hub, downloads, the history, the statuses")
    cache_dir: Path = setting(env="CACHE", parse=_path, check=_folder, factory=default_cache_dir,
        doc="rebuildable files: generated maps")
    submission_tag: str = setting("nmmo-arena", env="TAG", parse=_text, check=_tag,
        doc="the tag a model repo carries to be a submission")
    max_submission_mb: float = setting(200.0, env="MAX_MB", parse=_number, check=_positive,
        doc="largest submission (all its files) that is downloaded, in MB")
    history_repo: str = setting("nmmo-arena/match-history", env="HISTORY_REPO", parse=_text, check=_repo_id,
        doc="the dataset repo the match history is pushed to")
    validation_ticks: int = setting(16, env="VALIDATION_TICKS", parse=_integer, check=_between(1, 1024),
        doc="ticks of the small match that validates a new revision")
    validation_timeout_s: float = setting(300.0, env="VALIDATION_TIMEOUT_S", parse=_number, check=_positive,
        doc="seconds one revision's download and validation may take before it is tried again later")
    validation_workers: int = setting(2, env="VALIDATION_WORKERS", parse=_integer, check=_between(1, 64),
        doc="revisions validated at the same time (one slow download does not hold the others)")
    download_attempts: int = setting(5, env="DOWNLOAD_ATTEMPTS", parse=_integer, check=_at_least(1),
        doc="failed downloads (or validations cut off by the time limit) after which a revision ends in error")
    match_horizon: int = setting(1024, env="HORIZON", parse=_integer, check=_between(1, 1024),
        doc="ticks of every PvE and PvP match (shorten only for demos: results are not comparable)")
    workers: int = setting(0, env="WORKERS", parse=_integer, check=_between(0, 1024),
        doc="parallel matches on this machine (0: one per CPU)")
    ray_address: str | None = setting(None, env="RAY", parse=_optional, check=_ray,
        doc="a Ray cluster to run matches on (auto, ray://HOST:PORT); unset: local worker processes")
    pairing: str = setting(Pairing.GUARANTEE.value, env="PAIRING", parse=_text, check=_choice(tuple(p.value for p in Pairing)),
        retired=RETIRED_PAIRINGS, doc="how PvP pools are drawn")
    pvp_matches_per_round: int = setting(0, env="PVP_PER_ROUND", parse=_integer, check=_at_least(0),
        doc="PvP matches started per PvP round (0: one per worker)")
    pve_matches_per_round: int = setting(0, env="PVE_PER_ROUND", parse=_integer, check=_at_least(0),
        doc="PvE matches started per PvE round (0: one per worker)")
    sync_every_s: float = setting(60.0, env="SYNC_S", parse=_number, check=_positive,
        doc="seconds between looks at the Hub for new revisions")
    validate_every_s: float = setting(15.0, env="VALIDATE_S", parse=_number, check=_positive,
        doc="seconds between validation rounds")
    pve_every_s: float = setting(10.0, env="PVE_S", parse=_number, check=_positive,
        doc="seconds between looks for PvE work when there was none (rounds run back to back while there is)")
    pvp_every_s: float = setting(10.0, env="PVP_S", parse=_number, check=_positive,
        doc="seconds between PvP rounds")
    flush_every_s: float = setting(30.0, env="FLUSH_S", parse=_number, check=_positive,
        doc="seconds between moves of recorded matches from the write-ahead log into a shard")
    audit_minutes: float = setting(60.0, env="AUDIT_MINUTES", parse=_number, check=_at_least(0),
        doc="least minutes between two audits, reruns of a recorded match in idle time checked to reproduce it (0: no audits)")
    push_every_minutes: float = setting(5.0, env="PUSH_MINUTES", parse=_number, check=_positive,
        doc="minutes between pushes of the history to the Hub (one commit each)")
    compact_minutes: float = setting(240.0, env="COMPACT_MINUTES", parse=_number, check=_at_least(0),
        doc="least minutes between two compactions of the history (flushed shards and one file per match packed into "
            "one shard and bundles per day, published in one commit, at a push; 0: never): the Hub's limits on files "
            "per repo and entries per folder")
    pve_matches_per_stage: int = setting(PVE.matches_per_stage, env="PVE_MATCHES", parse=_integer, check=_between(1, 1000),
        doc="PvE matches per stage (the paper's 10)")
    next_stage_top1: float = setting(PVE.next_stage_top1, env="NEXT_STAGE_TOP1", parse=_number, check=_between(0, 1),
        doc="Top1Ratio in a PvE stage that opens the next stage")
    qualify_achievement: float = setting(PVE.qualify_achievement, env="QUALIFY", parse=_number, check=_between(0, 84),
        doc="mean Achievement in PvE stage 1 that qualifies for PvP (the paper's 25)")
    error_after_faulty_matches: int = setting(2, env="ERROR_AFTER", parse=_integer, check=_at_least(1),
        doc="faulty matches (crash, memory, or faults on 10% of ticks) after which a revision is marked error")
    model_cards: bool = setting(True, env="MODEL_CARDS", parse=_boolean,
        doc="open and update one pull request per qualified submission that adds its results to its model card")
    verdict_discussions: bool = setting(True, env="VERDICT_DISCUSSIONS", parse=_boolean,
        doc="at each verdict of a revision, open or comment on one discussion on its repo (modelcards.verdicts)")
    model_cards_every_s: float = setting(60.0, env="MODEL_CARDS_S", parse=_number, check=_positive,
        doc="seconds between looks for model-card results due (a look without any due costs no Hub call)")
    model_cards_minutes: float = setting(60.0, env="MODEL_CARDS_MINUTES", parse=_number, check=_at_least(0),
        doc="least minutes between two publications of one revision's results (the first, at qualification, waits for none)")
    seed_examples: bool = setting(True, env="SEED_EXAMPLES", parse=_boolean,
        doc="push the example and built-in submissions to an empty embedded Hub at start")
    owner_active: int = setting(3, env="OWNER_ACTIVE", parse=_integer, check=_at_least(0),
        doc="revisions of one owner taking part at once (in PvE or PvP); one more validated retires the owner's "
            "oldest (withdrawn, its history kept); 0: no limit")
    owner_daily: int = setting(5, env="OWNER_DAILY", parse=_integer, check=_at_least(0),
        doc="new revisions of one owner validated in 24 hours; later ones wait, queued, saying when the next slot "
            "opens; 0: no limit")
    owner_exempt: str = setting("", env="OWNER_EXEMPT", parse=_text, check=_owners,
        doc="comma-separated owners without these limits (the seed owner and the built-ins always are)")
    seed_owner: str = setting("nmmo-arena", env="SEED_OWNER", parse=_text, check=_owner,
        doc="namespace of the Arena's own seeded submissions (examples, packaged built-ins): their PvE matches "
            "yield to every other submission's")
    local_hub_port: int = setting(7861, env="LOCAL_HUB_PORT", parse=_integer, check=_between(0, 65535),
        doc="port of the embedded Hub on 127.0.0.1 (a free one if taken; 0: always a free one)")
    webhook_secret: str | None = setting(None, env="WEBHOOK_SECRET", parse=_optional, check=_webhook_secret, secret=True,
        doc="secret the Hub's webhooks must send (X-Webhook-Secret); unset: generated into DATA/webhook-secret on the "
            "embedded Hub, webhooks off with a real one")
    map_secret: str | None = setting(None, env="MAP_SECRET", parse=_optional, check=_map_secret, secret=True,
        doc="secret the held-out PvP maps are generated from; unset: generated into DATA/map-secret on the first start "
            "(set it as a Space secret so that a factory reset keeps the pool; changing it changes the pool)")
    isolation: str = setting(ISOLATION_MODES[0], env="ISOLATION", parse=lambda t: t.strip().lower(), check=_choice(ISOLATION_MODES),
        doc="strict: no submitted code runs where the isolation self-test finds file or network isolation missing "
            "(submissions wait, built-ins play on); warn: run it anyway, under a red banner (`python -m matchmaking.isolation`)")
    log_level: str = setting("INFO", env="LOG", parse=lambda t: t.strip().upper(), check=_choice(_LOG_LEVELS),
        doc="how much the Space logs")

    def __post_init__(self) -> None:
        problems = [problem for f in fields(self) if (problem := _problem(f, getattr(self, f.name), None, _default(f)))]
        if problems:
            raise SettingsError(problems)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ArenaSettings:
        """The settings the environment gives (`os.environ` by default), every value checked.

        Raises:
            `SettingsError`: naming every variable whose value is not accepted, and every
                `NMMO_ARENA_` variable that is not a setting.
        """
        environ = os.environ if environ is None else environ
        known = {f.metadata["env"]: f for f in fields(cls)}
        problems: list[str] = []
        for name in sorted(k for k in environ if k.startswith(PREFIX) and k not in known):
            if name in RETIRED:
                problems.append(_retired(name, environ[name], "setting", RETIRED[name], f"Unset {name}."))
                continue
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            problems.append(f"{name} is not a setting of the Arena.{hint} Known settings: {', '.join(sorted(known))}.")
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name in environ:
                value, problem = _parsed(f, environ[name], _default(f))
                if problem:
                    problems.append(problem)
                else:
                    values[f.name] = value
        if problems:
            raise SettingsError(problems)
        return cls(**values)

    @classmethod
    def read(cls, name: str, environ: Mapping[str, str] | None = None, *, default: Any = MISSING) -> Any:
        """One setting from the environment (`os.environ` by default), parsed and checked as
        `from_env` does, the other variables left alone: for a command that needs this one
        setting and must not refuse to run over another (the isolation doctor, the
        evaluation tool's isolation mode).

        Args:
            name (`str`): the field's name, e.g. `isolation`.
            default (*optional*): the value of an unset variable; the setting's own default
                if not given.

        Raises:
            `SettingsError`: the value is not accepted (the message names the variable and
                what is). `InvalidArgumentError`: `name` is no setting.

        Example:
            >>> ArenaSettings.read("isolation", {"NMMO_ARENA_ISOLATION": " Warn "})
            'warn'
            >>> ArenaSettings.read("isolation", {}, default="warn")
            'warn'
        """
        f = next((f for f in fields(cls) if f.name == name), None)
        if f is None:
            raise InvalidArgumentError(f"{name!r} is not a setting; the settings are {', '.join(f.name for f in fields(cls))}.")
        environ = os.environ if environ is None else environ
        default = _default(f) if default is MISSING else default
        if f.metadata["env"] not in environ:
            return default
        value, problem = _parsed(f, environ[f.metadata["env"]], default)
        if problem:
            raise SettingsError([problem])
        return value

    @classmethod
    def variables(cls) -> list[tuple[str, str, str]]:
        """(variable, default, meaning) of every setting, for docs/operators.md and `--help`."""
        return [(f.metadata["env"], _shown(_default(f)), f.metadata["doc"]) for f in fields(cls)]

    @property
    def submissions_dir(self) -> Path:
        """Downloaded submissions, one folder per revision."""
        return self.data_dir / "submissions"

    @property
    def local_hub_dir(self) -> Path:
        """Storage of the embedded local Hub."""
        return self.data_dir / "hub"

    @property
    def local_hub_token_file(self) -> Path:
        """The embedded Hub's write token, made on the first start (`matchmaking.hub.embedded`)."""
        return self.data_dir / "local-hub-token"

    @property
    def local_hub_address_file(self) -> Path:
        """Where a running Space says its embedded Hub listens, for `matchmaking.submit`."""
        return self.data_dir / "local-hub.json"

    @property
    def webhook_secret_file(self) -> Path:
        """The embedded default's webhook secret, made on the first start (`matchmaking.hub.webhooks`)."""
        return self.data_dir / "webhook-secret"

    @property
    def map_secret_file(self) -> Path:
        """The held-out maps' secret when `NMMO_ARENA_MAP_SECRET` is unset, made on the first
        start (`matchmaking.engine.maps.space_key`); sandboxed teams cannot read DATA."""
        return self.data_dir / "map-secret"

    @property
    def history_dir(self) -> Path:
        """The match-history dataset folder (see `history.store`)."""
        return self.data_dir / "history"

    @property
    def model_card_ledger(self) -> Path:
        """What was published on model cards (see `modelcards.ledger`), inside the history
        dataset (one file per writer beside this name)."""
        return self.history_dir / "modelcards" / "publications.jsonl"

    @property
    def verdict_ledger(self) -> Path:
        """Which verdicts were posted in discussions (see `modelcards.verdicts`), inside the
        history dataset (one file per writer beside this name)."""
        return self.history_dir / "modelcards" / "verdicts.jsonl"

    @property
    def legacy_model_card_ledger(self) -> Path:
        """Where the ledger lived before it joined the dataset (migrated by `history.writers.identity`)."""
        return self.data_dir / "model_cards.jsonl"

    @property
    def writer_ttl_s(self) -> float:
        """Seconds after its last heartbeat that a writer of the dataset counts as gone
        (`history.writers`): three pushes and a minute."""
        return 3 * 60.0 * self.push_every_minutes + 60.0

    @property
    def audit_log(self) -> Path:
        """Reruns of recorded matches and their verdicts (see `history.audits`), inside the history dataset."""
        return self.history_dir / "audits" / "audits.jsonl"

    @property
    def status_log(self) -> Path:
        """The submissions' status log, inside the history dataset (see `history.statuses`)."""
        return self.history_dir / "submissions" / "statuses.jsonl"


def _default(f: Any) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)


def _parsed(f: Any, text: str, default: Any) -> tuple[Any, str]:
    """A variable's text parsed and checked: (its value, "") or (None, what is wrong);
    `default` is what unsetting it gives, for the message."""
    try:
        value = f.metadata["parse"](text)
    except _Bad as exc:
        return None, _message(f, text, str(exc), default)
    return value, _problem(f, value, text, default)


def _problem(f: Any, value: Any, text: str | None, default: Any) -> str:
    check = f.metadata.get("check")
    why = f.metadata.get("retired", {}).get(value)
    if why:  # (a retired value is no longer among the accepted ones: the check names those)
        env = f.metadata["env"]
        others = f" (accepted: {check(value)})" if check is not None and check(value) else ""
        return _retired(env, text if text is not None else str(value), "option", why,
                        f"Unset {env} for the default ({_shown(default)}), or set another value{others}.")
    wanted = check(value) if check is not None else ""
    return _message(f, text if text is not None else str(value), wanted, default) if wanted else ""


def _retired(env: str, text: str, what: str, why: str, advice: str) -> str:
    return f"{env}={text!r} is a retired {what} (retired on {RETIRED_ON}: {why}). {advice}"


def _message(f: Any, text: str, wanted: str, default: Any) -> str:
    shown = "(hidden: a secret)" if f.metadata.get("secret") else repr(text)
    return (
        f"{f.metadata['env']}={shown} is not accepted: {f.metadata['doc']} must be {wanted}. "
        f"Set it to such a value, or unset it for the default ({_shown(default)})."
    )
