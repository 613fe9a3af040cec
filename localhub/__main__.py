"""Serve a local Hub: `python -m localhub --root data/hub --port 7861 [--token SECRET]`."""

from __future__ import annotations

import argparse
import time

from localhub.server import LocalHub


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m localhub", description="A Hugging Face Hub-compatible server on a folder.")
    parser.add_argument("--root", default="data/hub", help="folder holding the repos (created if missing)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7861)
    parser.add_argument("--token", default=None, help="token required for writes (default: writes are open)")
    args = parser.parse_args()
    hub = LocalHub(args.root, host=args.host, port=args.port, write_token=args.token).start()
    print(f"local Hub serving {args.root} at {hub.endpoint}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        hub.stop()


if __name__ == "__main__":
    main()
