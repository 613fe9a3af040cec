"""The addresses of the Arena's pages that others link to: one place, so that a link the
Arena posts (a verdict's discussion) and the page that answers it (the Replay tab) agree."""

from __future__ import annotations


def match_link(space_url: str, match_id: str) -> str:
    """The address that opens `match_id` in the Replay tab of the Space at `space_url`.

    Example:
        >>> match_link("https://nmmo-arena.hf.space/", "0b6d5e")
        'https://nmmo-arena.hf.space/?match=0b6d5e'
    """
    return f"{space_url.rstrip('/')}/?match={match_id}"
