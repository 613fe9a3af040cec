"""`python -m localhub` in a process of its own: the Hub as an operator serves it beside a
Space, standing in for huggingface.co, reached only over HTTP (the restart tests and
`bench.restart` use it, so that nothing of the Space's process is shared with its Hub)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from arena.errors import HubStartError

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


class HubProcess:
    """A `python -m localhub` process on a free port of 127.0.0.1, with a write token.

    Args:
        root (`Path`): the folder it serves.
        token (`str`): the token writes need.
        timeout (`float`): seconds to wait for it to answer.

    Raises:
        `RuntimeError`: it did not answer within `timeout`.
    """

    def __init__(self, root: Path, *, token: str = "hub-token", timeout: float = 60.0):
        self.token = token
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localhub", "--root", str(root), "--port", str(port), "--token", token],
            cwd=PACKAGE_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/api/whoami-v2", timeout=2)
                return
            except urllib.error.HTTPError:
                return  # it answers (without a token, with an error)
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise HubStartError(f"python -m localhub did not answer on {self.endpoint} within {timeout:.0f} s") from None
                time.sleep(0.1)

    def api(self) -> Any:
        """A Hub client with the write token."""
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=self.token)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
