"""Webhooks, over real HTTP on both ends: the embedded Hub registers and sends them, the
Space receives them and reacts.

- The embedded Hub's settings API driven by the real `HfApi` webhook methods; payloads that
  `huggingface_hub.WebhookPayload` parses, sent on every commit to what each webhook
  watches, never holding the commit, retried when the receiver does not answer.
- The Space: `Arena.start` on a temporary data folder (polling every 600 s, so only a webhook
  can explain a fast status) with the Gradio app served on a free port: a push shows
  `queued` within 5 s and its validation verdict within 30 s; a webhook with a wrong or no
  secret, or a malformed payload, is refused and changes nothing.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from huggingface_hub import HfApi, WebhookPayload, WebhookWatchedItem
from huggingface_hub.errors import HfHubHTTPError

from arena.revision import Revision
from localhub import LocalHub
from matchmaking.hub.pushing import push_submission, submission_card

ROOT = Path(__file__).resolve().parent.parent
WANDERER = ROOT / "examples" / "policies" / "wanderer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """A real HTTP endpoint that keeps what it is sent; `answers` scripts its first statuses,
    and `hold`, while not set, keeps every delivery waiting for its answer (up to 60 s)."""

    def __init__(self, answers: list[int] | None = None, hold: threading.Event | None = None):
        self.received: list[tuple[dict[str, str], dict]] = []
        self.answers = list(answers or [])
        self.hold = hold
        self.got = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.hold is not None:
                    outer.hold.wait(60)
                status = outer.answers.pop(0) if outer.answers else 200
                with outer.got:
                    outer.received.append(({k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                    outer.got.notify_all()
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int, timeout: float = 10.0) -> list[tuple[dict[str, str], dict]]:
        with self.got:
            self.got.wait_for(lambda: len(self.received) >= count, timeout=timeout)
            return list(self.received)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def hub(tmp_path):
    hub = LocalHub(tmp_path / "hub", write_token="tok").start()
    yield hub
    hub.stop()


def push(api: HfApi, repo_id: str, folder: Path, tag: str = "nmmo-arena") -> str:
    return push_submission(api, repo_id, folder=folder, card=submission_card(tag, repo_id))


# -- the embedded Hub's side ------------------------------------------------------------------

def test_the_settings_api_answers_the_real_client(hub):
    api = HfApi(endpoint=hub.endpoint, token="tok")
    made = api.create_webhook(url="http://127.0.0.1:9/hook", watched=[WebhookWatchedItem(type="user", name="alice")],
                              domains=["repo"], secret="s3cret-s3cret")
    assert made.url == "http://127.0.0.1:9/hook" and made.watched == [WebhookWatchedItem(type="user", name="alice")]
    assert made.domains == ["repo"] and made.secret == "s3cret-s3cret" and not made.disabled and len(made.id) == 24
    assert [w.id for w in api.list_webhooks()] == [made.id]
    assert api.get_webhook(made.id) == made
    changed = api.update_webhook(made.id, url="http://127.0.0.1:9/other", watched=[{"type": "model", "name": "bob/x"}])
    assert changed.url.endswith("/other") and changed.watched == [WebhookWatchedItem(type="model", name="bob/x")]
    assert changed.secret == "s3cret-s3cret"  # kept when not sent
    assert api.disable_webhook(made.id).disabled and not api.enable_webhook(made.id).disabled
    api.delete_webhook(made.id)
    assert api.list_webhooks() == []
    with pytest.raises(HfHubHTTPError) as missing:
        api.get_webhook(made.id)
    assert missing.value.response.status_code == 404
    with pytest.raises(HfHubHTTPError) as bad:
        api.create_webhook(url="http://127.0.0.1:9/hook", watched=[{"type": "planet", "name": "mars"}])
    assert bad.value.response.status_code == 400 and "Invalid watched item" in str(bad.value)
    with pytest.raises(HfHubHTTPError) as anonymous:  # a webhook's secret is for its owner only
        HfApi(endpoint=hub.endpoint, token=False).list_webhooks()
    assert anonymous.value.response.status_code == 401


def test_registered_webhooks_survive_a_restart(tmp_path):
    first = LocalHub(tmp_path / "hub", write_token="tok").start()
    made = HfApi(endpoint=first.endpoint, token="tok").create_webhook(url="http://127.0.0.1:9/h", watched=[{"type": "org", "name": "o"}])
    first.stop()
    again = LocalHub(tmp_path / "hub", write_token="tok").start()
    try:
        assert HfApi(endpoint=again.endpoint, token="tok").get_webhook(made.id) == made
    finally:
        again.stop()


def test_every_commit_sends_the_hubs_payload_to_what_watches_it(hub, tmp_path):
    api = HfApi(endpoint=hub.endpoint, token="tok")
    alice, bob_x, everyone = Receiver(), Receiver(), Receiver()
    try:
        api.create_webhook(url=alice.url, watched=[{"type": "user", "name": "alice"}], secret="alice-secret")
        api.create_webhook(url=bob_x.url, watched=[{"type": "model", "name": "bob/x"}])
        off = api.create_webhook(url=everyone.url, watched=[{"type": "user", "name": "*"}])
        api.disable_webhook(off.id)
        folder = tmp_path / "team"
        folder.mkdir()
        (folder / "policy.py").write_text("class Team: ...\n")
        first = push(api, "alice/team", folder)
        (folder / "policy.py").write_text("class Team:\n    pass\n")
        second = push(api, "alice/team", folder)
        push(api, "bob/x", folder)
        push(api, "bob/y", folder)

        seen = alice.wait(3)  # the repo's creation, then two commits (creating it again changes nothing)
        contents = [body for _, body in seen if body["event"]["scope"] == "repo.content"]
        assert [c["updatedRefs"][0]["newSha"] for c in contents] == [first, second]
        last = WebhookPayload.model_validate(contents[-1])  # the client's own model parses it
        assert (last.event.action, last.repo.type, last.repo.name, last.webhook.version) == ("update", "model", "alice/team", 3)
        assert last.updatedRefs[0].ref == "refs/heads/main" and last.updatedRefs[0].oldSha == first
        assert contents[-1]["repo"]["headSha"] == second and contents[-1]["repo"]["tags"] == ["nmmo-arena"]
        assert last.repo.url.web == f"{hub.endpoint}/alice/team" and last.repo.url.api == f"{hub.endpoint}/api/models/alice/team"
        assert {h["x-webhook-secret"] for h, _ in seen} == {"alice-secret"}
        assert [b["event"] for _, b in seen].count({"action": "create", "scope": "repo"}) == 1

        assert {b["repo"]["name"] for _, b in bob_x.wait(2)} == {"bob/x"}
        assert all("x-webhook-secret" not in h for h, _ in bob_x.received)
        api.enable_webhook(off.id)
        push(api, "carol/z", folder)
        assert {b["repo"]["name"] for _, b in everyone.wait(2)} == {"carol/z"}  # nothing while disabled
        time.sleep(0.5)
        assert len(alice.received) == 3 and {b["repo"]["name"] for _, b in bob_x.received} == {"bob/x"}
    finally:
        for r in (alice, bob_x, everyone):
            r.close()


@pytest.mark.slow
def test_delivery_never_holds_the_commit_and_retries_a_receiver_in_trouble(hub, tmp_path, caplog):
    api = HfApi(endpoint=hub.endpoint, token="tok")
    release = threading.Event()
    slow = Receiver(hold=release)
    flaky = Receiver(answers=[503, 503])
    try:
        api.create_webhook(url=slow.url, watched=[{"type": "user", "name": "slow"}])
        api.create_webhook(url=flaky.url, watched=[{"type": "user", "name": "flaky"}], domains=["repo"])
        folder = tmp_path / "f"
        folder.mkdir()
        (folder / "policy.py").write_text("class Team: ...\n")
        api.create_repo("slow/team")
        started = time.monotonic()
        api.upload_folder(repo_id="slow/team", folder_path=folder)
        # the commit is back while the receiver holds every delivery unanswered; a commit that
        # waited would be back only once the Hub gave up on the delivery (10 s)
        assert slow.received == [] and time.monotonic() - started < hub.app.webhooks.delivery.timeout_s
        release.set()
        assert len(slow.wait(2, timeout=10)) == 2

        api.create_repo("flaky/team")  # answered 503, 503, then 200: delivered on the third try, once
        got = flaky.wait(3, timeout=10)
        assert [body["event"] for _, body in got] == [{"action": "create", "scope": "repo"}] * 3
        time.sleep(1.5)
        assert len(flaky.received) == 3
    finally:
        slow.close()
        flaky.close()
    dead = f"http://127.0.0.1:{free_port()}/nobody"  # nothing listens there
    api.create_webhook(url=dead, watched=[{"type": "user", "name": "gone"}])
    hub.app.webhooks.delivery.first_wait_s = 0.05
    with caplog.at_level(logging.WARNING, logger="localhub.webhooks"):
        futures = hub.app.webhooks.repo_changed(hub.store.create_repo("model", "gone/team"), scope="repo", action="create",
                                                base_url=hub.endpoint, head_sha=None, tags=[])
        assert [f.result(timeout=20) for f in futures] == [0]
    assert f"delivery to {dead} failed 4 times" in caplog.text


# -- the Space's side ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The Arena on the embedded Hub with its Gradio app on a free port, as `app.py` wires
    them, polling only every 600 s."""
    from app import build_space
    from arena.settings import ArenaSettings

    settings = ArenaSettings(data_dir=tmp_path_factory.mktemp("space"), seed_examples=False, sync_every_s=600.0,
                             match_horizon=16, workers=1, local_hub_port=0)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    space = build_space(settings, space_url=url, bootstrap=0)
    arena = space.arena
    # the first scheduled discovery runs once the restore and the isolation self-test are done:
    # after it, only a webhook makes the Space look at the Hub (the next round is 600 s away)
    assert arena.matchmaker.discovered.wait(120)
    space.serve(host="127.0.0.1", port=port, block=False, quiet=True)
    token = (settings.data_dir / "local-hub-token").read_text().strip()
    yield {"arena": arena, "url": url, "api": HfApi(endpoint=arena.api.endpoint, token=token),
           "secret": (settings.data_dir / "webhook-secret").read_text().strip()}
    space.stop()


def wait_for(condition, timeout: float):
    """Poll `condition()` every 20 ms; (its first truthy value, seconds waited), or (None, timeout)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        value = condition()
        if value:
            return value, time.monotonic() - started
        time.sleep(0.02)
    return None, timeout


def post_webhook(url: str, body: bytes, secret: str | None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"X-Webhook-Secret": secret} if secret is not None else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers, method="POST"), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.xdist_group("space")  # the MCP test below reads the match this push plays
def test_a_push_is_queued_within_5_s_and_validated_within_30_s(space, tmp_path, caplog):
    from arena.lifecycle import Status

    arena, api = space["arena"], space["api"]
    hooks = api.list_webhooks()  # the Space registered itself with the embedded Hub
    assert [(h.url, h.secret, h.disabled) for h in hooks] == [(space["url"] + "/webhooks/hub", space["secret"], False)]
    folder = tmp_path / "wanderer"
    folder.mkdir()
    (folder / "policy.py").write_bytes((WANDERER / "policy.py").read_bytes())
    with caplog.at_level(logging.INFO, logger="matchmaking.hub.webhooks"):
        sha = push(api, "alice/wanderer", folder)
        pushed = time.monotonic()
        state, queued_s = wait_for(lambda: arena.statuses.get(Revision("alice/wanderer", sha)), timeout=5)
        assert state is not None, "no status 5 s after the push"
        verdict, _ = wait_for(lambda: (s := arena.statuses.get(Revision("alice/wanderer", sha))) and s.status in (
            Status.EVALUATING, Status.REJECTED, Status.EVALUATED, Status.QUALIFIED, Status.ERROR) and s, timeout=30)
        verdict_s = time.monotonic() - pushed
    assert verdict is not None, f"no verdict 30 s after the push: {arena.statuses.get('alice/wanderer', sha)}"
    assert verdict.status is Status.EVALUATING and "without a fault" in verdict.reason
    print(f"\npush -> queued {queued_s:.2f} s, -> validated ({verdict.status.value}) {verdict_s:.1f} s")
    assert f"repo.content update on model alice/wanderer: discovering it now (main at {sha[:12]})" in caplog.text

    from gradio_client import Client  # what the Submissions tab shows, through the Space's API

    table = Client(space["url"] + "/", verbose=False).predict(api_name="/submissions")
    rows = [dict(zip(table["headers"], row)) for row in table["data"]]
    mine = [r for r in rows if "alice/wanderer" in r["Policy"]]
    assert [f"@[{sha[:7]}](/?policy=alice/wanderer@{sha})" in r["Policy"] for r in mine] == [True]
    assert mine[0]["Status"] in ("evaluating", "evaluated", "qualified")

    with urllib.request.urlopen(space["url"] + "/config", timeout=10) as answer:  # the About tab, as served
        about = [c["props"].get("value") or "" for c in json.load(answer)["components"] if c.get("type") == "markdown"]
    assert any("python -m matchmaking.submit" in text and f"embedded Hub at {api.endpoint}" in text for text in about)


def test_a_webhook_without_the_secret_or_well_formed_changes_nothing(space, tmp_path):
    from localhub.webhooks import repo_payload

    arena, api = space["arena"], space["api"]
    hook = api.list_webhooks()[0]
    api.disable_webhook(hook.id)  # push without the Hub telling the Space: only a forged webhook could
    try:
        folder = tmp_path / "quiet"
        folder.mkdir()
        (folder / "policy.py").write_bytes((WANDERER / "policy.py").read_bytes())
        sha = push(api, "bob/quiet", folder)
        store = arena.hub.store
        payload = repo_payload(hook, scope="repo.content", action="update", repo=store.repo("model", "bob/quiet"),
                               base_url=api.endpoint, head_sha=sha, tags=["nmmo-arena"],
                               updated_refs=[("refs/heads/main", None, sha)])
        body = json.dumps(payload).encode()
        url = space["url"] + "/webhooks/hub"
        assert post_webhook(url, body, "not-the-secret") == (403, {"error": "Invalid webhook secret."})
        assert post_webhook(url, body, None)[0] == 401
        status, answer = post_webhook(url, b'{"event": {"action": "update"}, "repo": 3}', space["secret"])
        assert status == 400 and "event.scope" in answer["error"] and "webhook" in answer["error"]
        time.sleep(2.0)
        assert arena.statuses.get(Revision("bob/quiet", sha)) is None

        assert post_webhook(url, body, space["secret"]) == (200, {"accepted": True})  # the same payload, signed
        state, queued_s = wait_for(lambda: arena.statuses.get(Revision("bob/quiet", sha)), timeout=5)
        assert state is not None
        pr_only = dict(payload, updatedRefs=[{"ref": "refs/pr/1", "oldSha": None, "newSha": "f" * 40}])
        assert post_webhook(url, json.dumps(pr_only).encode(), space["secret"]) == (200, {"accepted": False})
    finally:
        api.enable_webhook(hook.id)


def test_registering_again_updates_the_one_webhook(hub):
    from matchmaking.hub.webhooks import register

    api = HfApi(endpoint=hub.endpoint, token="tok")
    first = register(api, url="http://127.0.0.1:9/webhooks/hub", secret="first-secret", watched=[{"type": "user", "name": "*"}])
    api.disable_webhook(first)
    again = register(api, url="http://127.0.0.1:9/webhooks/hub", secret="second-secret", watched=[{"type": "user", "name": "*"}])
    assert again == first  # a restart does not pile webhooks up, and turns its own back on
    assert [(h.id, h.secret, h.disabled) for h in api.list_webhooks()] == [(first, "second-secret", False)]


def test_pushes_arriving_during_a_discovery_are_taken_together():
    from matchmaking.hub.webhooks import PushReactor

    batches, woken = [], []
    first_started, release = threading.Event(), threading.Event()

    def discover(repos: set[str]) -> int:
        batches.append(sorted(repos))
        first_started.set()
        release.wait(5)
        return len(repos)

    reactor = PushReactor(discover, then=lambda: woken.append(True))
    try:
        reactor.push("a/one")
        assert first_started.wait(5)
        for repo in ("b/two", "c/three", "b/two"):  # a burst while the first look runs
            reactor.push(repo)
        release.set()
        _, waited = wait_for(lambda: len(batches) == 2 and len(woken) == 2, timeout=5)
        assert batches == [["a/one"], ["b/two", "c/three"]] and waited < 5
    finally:
        reactor.stop()


@pytest.mark.xdist_group("space")
def test_the_read_endpoints_are_mcp_tools_a_real_client_can_call(space, tmp_path):
    """The Space as `app.py` serves it is an MCP server (streamable HTTP at /gradio_api/mcp/):
    a real MCP client lists the read endpoints as tools, each parameter typed and described,
    and calls them: the matches (the pushed revision's validation match among them), one
    match's record, the PvP leaderboard searched, a revision's exposure and the meter."""
    import ast
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    if not space["api"].repo_exists("alice/wanderer"):  # run alone: push the revision the push test pushes
        folder = tmp_path / "wanderer"
        folder.mkdir()
        (folder / "policy.py").write_bytes((WANDERER / "policy.py").read_bytes())
        push(space["api"], "alice/wanderer", folder)

    async def talk() -> tuple[dict, dict]:
        async with streamablehttp_client(space["url"] + "/gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}

                async def call(name: str, **arguments) -> object:
                    answer = await session.call_tool(name, arguments)
                    assert not answer.isError, (name, answer.content)
                    return ast.literal_eval(answer.content[0].text)  # Gradio's MCP answers a value as its text

                for _ in range(240):  # the tables take up the recorded match within a few seconds (60 s: pushed here)
                    listed = await call("matches", policy="alice/wanderer", track="validation", stage="", since="", until="")
                    if listed["data"]:
                        break
                    await asyncio.sleep(0.25)
                match_id = listed["data"][0][listed["headers"].index("Match")]
                answers = {"matches": listed, "match": await call("match", match_id=match_id),
                           "missing": await call("match", match_id="no-such-match"),
                           "pvp_table": await call("pvp_table", search="", older=False, min_matches=0),
                           "exposure": await call("exposure", revision=""), "settling": await call("settling")}
                return tools, answers

    tools, answers = asyncio.run(talk())
    for name in ("pvp_table", "pve_table", "submissions", "matches", "match", "policy", "exposure", "settling",
                 "head_to_head", "now_playing", "owner_slots", "analytics"):
        assert name in tools, sorted(tools)
    matches_schema = tools["matches"].inputSchema["properties"]
    assert matches_schema["track"]["type"] == "string" and "validation" in matches_schema["track"]["description"]
    assert tools["pvp_table"].inputSchema["properties"]["older"]["type"] == "boolean"
    assert "exposure ledger" in tools["exposure"].description
    record = answers["match"]
    assert record["replay"] == f"/?match={record['match_id']}" and record["rerun"].endswith(record["match_id"])
    teams = record["teams"]
    assert any("alice/wanderer" in str(row[teams["headers"].index("player")]) for row in teams["data"])
    assert "No recorded match has the id 'no-such-match'" in answers["missing"]["error"]
    assert answers["pvp_table"]["headers"][:2] == ["Rank", "Policy"]
    with urllib.request.urlopen(space["url"] + "/gradio_api/mcp/schema", timeout=30) as answer:  # what the Hub's MCP reads
        assert "match" in {tool["name"] for tool in __import__("json").loads(answer.read())}
