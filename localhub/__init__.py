"""A local stand-in for the Hugging Face Hub: the Arena's embedded, offline default.

`LocalHub(root).start()` serves a Hub-compatible HTTP API from a folder on disk; point
`huggingface_hub` at `hub.endpoint`. Run it on its own with `python -m localhub`.
"""

from localhub.server import LocalHub, LocalHubApp
from localhub.store import HubStore

__all__ = ["HubStore", "LocalHub", "LocalHubApp"]
