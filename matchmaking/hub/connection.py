"""Which Hub a command talks to: the one answer `submit`, `rerun` and `evaluate --against` share.

First found:

1. `--hub URL`, then `NMMO_ARENA_HUB`, then `HF_ENDPOINT`: a Hub the user names, written
   to with the user's own token (`HF_TOKEN` or `hf auth login`);
2. else the embedded Hub of the Space running on the data folder (`--data DIR`, else
   `NMMO_ARENA_DATA`, as the Space resolves it), whose endpoint and token that Space
   published (`DATA/local-hub.json`, `DATA/local-hub-token`: `matchmaking.hub.embedded`).

`find_hub` stops there: `submit` pushes to a running Space or to a Hub it is told of.
`connect` goes one step further for the commands that only read (a rerun, a practice
run): when no Space runs on the data folder, or its address file names an endpoint that
does not answer, it starts that folder's embedded Hub (`DATA/hub`) on a free port for the
run, and `HubConnection.close()` stops it after.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from huggingface_hub import HfApi, get_token

from arena.errors import NoHubError
from arena.files import secret_file
from arena.settings import ArenaSettings
from matchmaking.hub import embedded as embedded_hub


@dataclass(frozen=True)
class HubTarget:
    """Where a command goes, with which token, and how that was decided (for messages)."""

    endpoint: str
    token: str | None
    """The embedded Hub's token; None for a Hub the user named (their own token is used)."""
    how: str
    space_url: str | None = None
    """The page of the Space whose embedded Hub this is, where a push's status shows."""


def find_hub(settings: ArenaSettings, *, hub: str | None = None, environ: Mapping[str, str] | None = None) -> HubTarget:
    """The Hub a command talks to (see the module's docstring for the order).

    Raises:
        `NoHubError`: none configured and no embedded Hub published in the data folder.
    """
    environ = dict(os.environ if environ is None else environ)
    for endpoint, how in ((hub, "--hub"), (settings.hub_endpoint, "NMMO_ARENA_HUB"), (environ.get("HF_ENDPOINT"), "HF_ENDPOINT")):
        if endpoint:
            return HubTarget(endpoint.rstrip("/"), None, f"{how}, with your token (HF_TOKEN or `hf auth login`)")
    try:
        address = embedded_hub.find(settings)
    except ValueError as exc:
        raise NoHubError(str(exc)) from None
    if address is None:
        raise NoHubError(
            f"No Hub to push to: none is configured, and no Space on this machine has published an embedded Hub in "
            f"{settings.local_hub_address_file}. Start the Space (`make run`) and submit again, or point "
            "at its data folder (`--data DIR` or NMMO_ARENA_DATA), or at a Hub (`--hub https://huggingface.co`)."
        )
    return HubTarget(address.endpoint, address.token, f"the embedded Hub of the Space on {settings.data_dir}, found in "
                     f"{address.source.name}, its token in {settings.local_hub_token_file.name}", address.space_url)


def _answers(endpoint: str, timeout_s: float = 5.0) -> bool:
    """Whether anything answers HTTP at `endpoint` (an error status is an answer)."""
    try:
        with urllib.request.urlopen(f"{endpoint.rstrip('/')}/api/models?limit=1", timeout=timeout_s):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@dataclass
class HubConnection:
    """The Hub a command reads from; `close()` stops an embedded Hub started for it."""

    api: HfApi
    how: str
    started: Any = field(default=None, repr=False)

    def describe(self) -> str:
        return f"{self.api.endpoint} ({self.how})"

    def close(self) -> None:
        if self.started is not None:
            self.started.stop()
            self.started = None


def connect(settings: ArenaSettings, *, hub: str | None = None, environ: Mapping[str, str] | None = None,
            purpose: str = "this rerun") -> HubConnection:
    """The Hub that holds the submissions a command fetches (see the module's docstring for
    the order); `purpose` names the run an embedded Hub is started for.

    Raises:
        `NoHubError`: none configured, no Space running on the data folder, and no
            embedded Hub in it to start.
    """
    try:
        target = find_hub(settings, hub=hub, environ=environ)
    except NoHubError:
        target = None  # no Space published its embedded Hub (or its address file is unreadable)
    if target is not None and target.token is None:  # a Hub named by the user or the environment
        return HubConnection(HfApi(endpoint=target.endpoint, token=get_token()), target.how)
    if target is not None and _answers(target.endpoint):
        return HubConnection(HfApi(endpoint=target.endpoint, token=target.token), target.how)
    if not settings.local_hub_dir.is_dir():
        raise NoHubError(
            f"No Hub to fetch the submissions from: none is configured (--hub, NMMO_ARENA_HUB), no Space runs on "
            f"{settings.data_dir}, and it holds no embedded Hub ({settings.local_hub_dir} is missing). Give the Space's "
            "data folder with --data DIR, or its Hub with --hub URL."
        )
    local = embedded_hub.start_local_hub(replace(settings, local_hub_port=0))  # a free port: the Space's may come back
    why = "its address file names an endpoint that does not answer" if target is not None else "no Space is running on it"
    api = HfApi(endpoint=local.endpoint, token=secret_file(settings.local_hub_token_file))
    return HubConnection(api, f"the embedded Hub of {settings.local_hub_dir}, started for {purpose}: {why}", started=local)
