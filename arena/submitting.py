"""How a participant submits to this Space, in words: the command and where the Hub is.

One pure function of the settings and the Hub's address, so the About tab
(`leaderboard.about.about_markdown`) says exactly what `python -m matchmaking.submit`
does and where it pushes (docs/participants.md says the same for the defaults). Kept in the shared
core because the leaderboard may not import the matchmaker.
"""

from __future__ import annotations

from arena.settings import ArenaSettings


def how_to_submit(settings: ArenaSettings, *, hub_url: str) -> str:
    """Markdown: the `submit` command, and where this Space's submissions live.

    Args:
        settings (`ArenaSettings`): the Space's (its tag, whether the Hub is embedded, its data folder).
        hub_url (`str`): the Hub's endpoint as the Space reaches it.

    Example:
        >>> "nmmo-arena-submit ./your-team --repo YOUR-USER/YOUR-TEAM" in how_to_submit(ArenaSettings(), hub_url="http://127.0.0.1:7861")
        True
    """
    tag = settings.submission_tag
    token, address = settings.local_hub_token_file, settings.local_hub_address_file
    command = f"""```bash
python -m matchmaking.submit ./your-team --repo YOUR-USER/YOUR-TEAM   # from a checkout of the Arena
nmmo-arena-submit ./your-team --repo YOUR-USER/YOUR-TEAM              # after `pip install .`
```

It checks the folder as the Arena will (`policy.py` at its root, the size limit of
{settings.max_submission_mb:g} MB, `policy.py` parsed, then the validation match played in
the sandbox as the Space plays it; `--no-validate` skips that), adds the tag **`{tag}`** to its `README.md` model
card (creating one if missing), pushes it, and prints the commit and where to watch its
status."""
    if settings.hub_endpoint is None:
        where = f"""This Space runs its own **embedded Hub at {hub_url}** (offline, no account). Writing to it
needs its token, kept in `{token}`; the command finds the endpoint and the
token on its own in the Space's data folder (`{address}`; another data folder:
`--data DIR` or `NMMO_ARENA_DATA`). The same push by hand:
`HF_ENDPOINT={hub_url} HF_TOKEN=$(cat {token}) hf upload YOUR-USER/YOUR-TEAM ./your-team .`"""
    else:
        where = f"""Submissions live on the Hub at **{hub_url}**: log in there first (`hf auth login`, or set
`HF_TOKEN`), and push with `--hub {hub_url}` (or `NMMO_ARENA_HUB={hub_url}`). The same push by
hand: `hf upload YOUR-USER/YOUR-TEAM ./your-team .`, with the tag in the card."""
    return f"{command}\n\n{where}\n"
