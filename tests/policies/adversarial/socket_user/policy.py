"""Tries the network at tick 1: the TCP port in port.txt on this machine, then a public
address and a name lookup; reports each outcome in an exception."""
import os
import socket


def _attempt(fn):
    try:
        fn()
        return "OK"
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__


class Team:
    def __init__(self, team_id, env_config):
        with open(os.path.join(os.path.dirname(__file__), "port.txt")) as f:
            self.port = int(f.read())

    def act(self, observations):
        def local():
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()

        def remote():
            socket.create_connection(("1.1.1.1", 53), timeout=1).close()

        def lookup():
            socket.getaddrinfo("huggingface.co", 443)

        results = {"local": _attempt(local), "remote": _attempt(remote), "dns": _attempt(lookup)}
        raise RuntimeError("report " + " ".join(f"{k}={v}" for k, v in results.items()))
