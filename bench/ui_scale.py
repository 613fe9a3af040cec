"""The Space at the size of a real field, measured from outside in Chromium.

    python -m bench.ui_scale --json [--revisions 500] [--matches 200000] [--idle-s 60]

1. **The history.** A data folder holds the project's synthetic history
   (`arena.simulation.random_history_columns`: `--revisions` policies in pools of 16,
   `--matches` PvP matches, in day shards as compaction leaves them) and one real match of
   built-ins, recorded with its replay (so that a replay can be played).
2. **The Space.** `python app.py` starts on that folder as `make run` starts it (the embedded
   Hub, offline; no seeded examples, so nothing is played meanwhile): `first_page_s` is the
   time from its start to its first page with the PvP rows, `settled_s` to the page with the
   whole-history columns (fitted after the first page on a long history) and every match
   pushed to the Hub dataset (the Space pushes the history it was given first); the
   figures below are taken after that, of a Space with nothing happening.
3. **A visitor**, in Debian's Chromium at 1280x900, each figure the median of `--repeats`:
   - `pvp_rows_visible_ms`: from navigation to the PvP table's first row on screen (the
     page's own clock: the animation frame after the one that first laid the row out in
     view, polled each frame), whichever shows it first: the first rows the page's HTML
     carries (`leaderboard.first_rows.FirstRows`) or Gradio's table; `pvp_table_ready_ms` to
     Gradio's table's (the rows a visitor can search and sort); `pvp_rows_harness_ms` that
     as Playwright sees it from Python (its polling and round trips, behind whatever the
     page's main thread does next); `gradio_floor_ms`, Gradio's table's for a bare Gradio
     app in this process serving nothing but the same first page of the table as a static
     value (the framework's own start on this machine, measured in the same run), and
     `pvp_rows_over_floor` the ratio of `pvp_table_ready_ms` to it;
   - `search_ms`: from a search typed into the PvP table's box (the browser's input event) to
     the frame that shows the rows it keeps; `search_harness_ms` the same from Python,
     Playwright's typing and polling included;
   - `sort_ms`: from a click on the MLE header (the browser's click event) to the frame
     that shows the rows in its order (the whole table is ordered on the Space, and its
     first page shown); `sort_harness_ms` the same from Python, Playwright's click
     (locating, scrolling, waiting for the header to be still) and its polling included;
   - `policy_page_ms`: from a click on a policy's link in the PvP table (the browser's click
     event; a different row at each visit) to the frame that shows that policy's heading (its
     page opens in the page: `leaderboard.pages.GO_JS`); `policy_page_harness_ms` as
     Playwright sees it from Python;
   - `policy_address_ms`: from navigation to `/?policy=...` (an address pasted in a fresh
     tab) to that policy's heading on screen, measured as the rows are, a different policy
     at each visit (its page drawn for it);
   - `open_tab_kb_per_min`: what an open tab on the PvP table receives in a minute (every
     byte on the wire: Chrome DevTools' encoded data lengths), nothing happening;
   - `replay_fps_in_space`: frames a second the page draws while the real match's replay
     plays inside the Space, after every tab was opened; `replay_rate` its ticks a second
     against the viewer's nominal rate (1.0: on time);
   - `replay_tab_mb`: the tab's JS heap after that.
4. **The idle Space**, no page open: `idle_cpu_s_per_min` (its process and children's CPU
   seconds over `--idle-s`, scaled to a minute) and `space_rss_mb` (their resident memory).

Targets (issue 39): rows within 1 s, a search or sort within 200 ms, a policy page within
500 ms, a replay tab under 300 MB, the idle Space under 2 CPU-seconds a minute and 1.5 GB,
an open tab under 200 KB a minute, a replay at 50 fps or more at its nominal rate, the first
page within 30 s. The JSON line is last; a missed target is printed as missed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

from arena import PROJECT_ROOT
from arena.policies import builtin
from arena.revision import Revision
from arena.rules import stage_opponents
from arena.simulation import Population, random_history_columns
from bench.ratings_recompute import write_history
from history.store import HistoryStore
from leaderboard.tables import FITTING

TARGETS = {"pvp_rows_visible_ms": ("<=", 1000), "search_ms": ("<=", 200), "sort_ms": ("<=", 200),
           "policy_page_ms": ("<=", 500), "replay_tab_mb": ("<=", 300), "idle_cpu_s_per_min": ("<=", 2.0),
           "space_rss_mb": ("<=", 1536), "open_tab_kb_per_min": ("<=", 200), "replay_fps_in_space": (">=", 50),
           "first_page_s": ("<=", 30)}

ROWS = "#pvp-table .virtual-row"

#: The moment the browser takes the next click on a PvP header (the event's own timestamp,
#: on `performance.now()`'s clock): where a visitor's sort starts.
SORT_CLICK_JS = """() => { window.__sortShown = 0;
  document.addEventListener("click", (e) => { if (e.target.closest("#pvp-table th")) window.__sortClicked = e.timeStamp; },
                            {capture: true, once: true}); }"""

#: The moment the browser takes the next click in the PvP table (the event's own timestamp;
#: its target may be beside the link pressed: `leaderboard.pages.GO_JS`): where a visitor's
#: opening of a policy starts; the `SHOWN_JS` marks reset for the page it opens.
LINK_CLICK_JS = """() => { window.__shown = 0; window.__shownSeenAt = 0;
  document.addEventListener("click", (e) => { if (e.target.closest("#pvp-table")) window.__linkClicked = e.timeStamp; },
                            {capture: true, once: true}); }"""

#: The moment the browser takes the next input into the PvP table's search box (the event's
#: own timestamp): where a visitor's search starts.
SEARCH_TYPED_JS = """() => { window.__searchShown = 0;
  document.addEventListener("input", (e) => { if (e.target.closest("#pvp-search")) window.__searchTyped = e.timeStamp; },
                            {capture: true, once: true}); }"""

#: True once the PvP table holds only the rows of the policy searched for (1 to 3: its
#: revisions), polled each animation frame, noting when.
SEARCHED_JS = """(wanted) => { const rows = document.querySelectorAll('#pvp-table .virtual-row');
  if (!(rows.length >= 1 && rows.length <= 3 && rows[0].innerText.includes(wanted))) return false;
  window.__searchShown = window.__searchShown || performance.now(); return true; }"""

#: True once the PvP table's first row changed (polled each animation frame: the frame that
#: shows it), noting when.
SORTED_JS = """(first) => { const c = document.querySelector('#pvp-table .virtual-row [data-col="1"]');
  if (!c || c.innerText === first) return false;
  window.__sortShown = window.__sortShown || performance.now(); return true; }"""

#: True once `selector` matches an element laid out on screen (and holding `text`, if given),
#: polled each animation frame; `window.__shown` is then the start of the frame after the one
#: that first laid it out, which has painted it: where a visitor's wait for it ends.
SHOWN_JS = """([selector, text, key]) => { key = key || "__shown"; const seen = key + "SeenAt";
  if (window[key]) return true;
  if (!window[seen]) { const e = document.querySelector(selector);
    if (!e || (text && !e.innerText.includes(text))) return false;
    const box = e.getBoundingClientRect();
    if (box.height <= 0 || box.width <= 0 || box.bottom <= 0 || box.top >= innerHeight) return false;
    window[seen] = performance.now(); requestAnimationFrame((t) => { window[key] = performance.now(); }); }
  return false; }"""

#: The PvP table's first rows as the page's HTML carries them (`leaderboard.first_rows.FirstRows`).
FIRST_ROWS = "#arena-first-rows tbody tr"

#: True once Gradio's PvP table shows a row (`SHOWN_JS`, `window.__shownTable`), the served first
#: rows (`window.__shownFirst`) marked too as they show, in the same frames.
ROWS_SHOWN_JS = f"""() => {{ const shown = {SHOWN_JS};
  shown(["{FIRST_ROWS}", "", "__shownFirst"]); return shown(["{ROWS}", "", "__shownTable"]); }}"""


def rows_ms(page: Any) -> tuple[float, float, float]:
    """After a navigation to the PvP page: ms from it to the frame showing its first row
    (the served first rows or Gradio's table, whichever first), to the frame showing Gradio's
    table's (`ROWS_SHOWN_JS`), and to Playwright's seeing that from Python."""
    page.wait_for_function(ROWS_SHOWN_JS, polling="raf", timeout=120_000)
    harness = page.evaluate("() => performance.now()")
    first, table = page.evaluate("() => [window.__shownFirst || Infinity, window.__shownTable]")
    return min(first, table), table, harness


def shown_ms(page: Any, selector: str, text: str = "") -> tuple[float, float]:
    """After a navigation: ms from it to the frame showing `selector` (`SHOWN_JS`), and to
    Playwright's seeing it from Python (its polling and round trips included)."""
    page.wait_for_function(SHOWN_JS, arg=[selector, text], polling="raf", timeout=120_000)
    harness = page.evaluate("() => performance.now()")
    return page.evaluate("() => window.__shown"), harness


#: The start of what the PvP page says while the whole-history columns are fitted.
FITTING_MARK = FITTING[:40]

#: What the PvP page says once the Hub dataset holds every match (`leaderboard.tables.source_line`).
PUSHED_MARK = "All are in the Hub dataset"


def make_history(folder: Path, *, revisions: int, matches: int) -> str:
    """The synthetic history and one real recorded match (its id returned)."""
    from matchmaking.engine.config import MatchConfig
    from matchmaking.engine.match import MatchSpec, policies_for
    from matchmaking.service.executor import play_outcome
    from matchmaking.teams.factory import in_process_host

    frame = pd.DataFrame(random_history_columns(Population.random(revisions, seed=0), matches, seed=1), copy=False)
    write_history(frame, folder, shard_matches=max(1, matches // 60))
    spec = MatchSpec(seed=7, policies=policies_for(builtin("combat"), [builtin(n) for n in stage_opponents(1)]),
                     config=MatchConfig(horizon=256), track="pve", stage=1)
    outcome = play_outcome(spec, in_process_host, record=True)
    assert outcome.result is not None, outcome.error
    store = HistoryStore(folder)
    store.record(outcome.result, replay=outcome.replay)
    store.flush()
    return outcome.result.match_id


def start_space(data: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "NMMO_ARENA_DATA": str(data), "NMMO_ARENA_SEED_EXAMPLES": "0", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "NMMO_ARENA_LOG": "WARNING"}
    return subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], env=env, cwd=PROJECT_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def wait_served(url: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the Space did not serve {url} within {timeout_s:g} s")


def space_usage(process: psutil.Process) -> tuple[float, float]:
    """CPU seconds and resident MB of the Space's process and its children."""
    family = [process, *process.children(recursive=True)]
    cpu = rss = 0.0
    for p in family:
        try:
            times = p.cpu_times()
            cpu += times.user + times.system
            rss += p.memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            continue
    return cpu, rss


def visitor(url: str, match_id: str, policies: list[str], repeats: int, minute_s: float) -> dict[str, float]:
    """A visitor's figures (the module's 3.): each of `repeats` visits in a fresh context,
    the k-th following the k-th row's policy link and then opening the address of the k-th
    of `policies` (each a policy's first visit: its page drawn)."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(PROJECT_ROOT / "tests"))
    from tests_support import BROWSER_ARGS, CHROMIUM

    out: dict[str, list[float]] = {k: [] for k in ("pvp_rows_visible_ms", "pvp_table_ready_ms", "pvp_rows_harness_ms",
                                                   "search_ms", "search_harness_ms", "sort_ms",
                                                   "sort_harness_ms", "policy_page_ms", "policy_page_harness_ms",
                                                   "policy_address_ms")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
        for visit in range(repeats):
            policy = policies[visit % len(policies)]
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(url, wait_until="commit")
            shown, table, harness = rows_ms(page)
            out["pvp_rows_visible_ms"].append(shown)
            out["pvp_table_ready_ms"].append(table)
            out["pvp_rows_harness_ms"].append(harness)
            first = page.locator(f"{ROWS} [data-col='1']").first.inner_text()
            wanted = policy.split("/")[1]
            page.evaluate(SEARCH_TYPED_JS)
            started = time.perf_counter()
            page.locator("#pvp-search textarea, #pvp-search input").first.fill(wanted)
            page.wait_for_function(SEARCHED_JS, arg=wanted, timeout=60_000, polling="raf")
            out["search_harness_ms"].append((time.perf_counter() - started) * 1000)
            out["search_ms"].append(page.evaluate("() => window.__searchShown - window.__searchTyped"))
            page.locator("#pvp-search textarea, #pvp-search input").first.fill("")
            page.wait_for_function(f"() => document.querySelectorAll('{ROWS}').length > 3", timeout=60_000)
            page.evaluate(SORT_CLICK_JS)
            started = time.perf_counter()
            page.locator("#pvp-table thead th", has_text="MLE").first.click()
            page.wait_for_function(SORTED_JS, arg=first, timeout=60_000, polling="raf")
            out["sort_harness_ms"].append((time.perf_counter() - started) * 1000)
            out["sort_ms"].append(page.evaluate("() => window.__sortShown - window.__sortClicked"))
            link = page.locator(f"{ROWS} a[href^='/?policy=']").nth(visit)
            linked = Revision.parse(link.get_attribute("href").split("=", 1)[1]).policy_id
            page.evaluate(LINK_CLICK_JS)
            started = time.perf_counter()
            link.click()
            page.wait_for_function(SHOWN_JS, arg=["#policy-heading", linked], polling="raf", timeout=60_000)
            out["policy_page_harness_ms"].append((time.perf_counter() - started) * 1000)
            out["policy_page_ms"].append(page.evaluate("() => window.__shown - window.__linkClicked"))
            page.goto(f"{url}?policy={policy}", wait_until="commit")
            out["policy_address_ms"].append(shown_ms(page, "#policy-heading", policy)[0])
            context.close()
        figures = {k: round(statistics.median(v), 1) for k, v in out.items()}

        # an open tab, nothing happening: what reaches it in a minute
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector(ROWS, timeout=120_000)
        page.wait_for_timeout(3000)
        cdp = context.new_cdp_session(page)
        received = [0]
        cdp.on("Network.dataReceived", lambda e: received.__setitem__(0, received[0] + e.get("encodedDataLength", 0)))
        cdp.on("Network.webSocketFrameReceived", lambda e: received.__setitem__(0, received[0] + len(e["response"]["payloadData"])))
        cdp.send("Network.enable")
        page.wait_for_timeout(minute_s * 1000)
        figures["open_tab_kb_per_min"] = round(received[0] / 1024 * 60 / minute_s, 1)

        # every tab opened, then the real match's replay played inside the Space
        for tab in ("Head to head", "PvE", "Submissions", "Policy", "Analytics", "Matches", "About / Submit", "PvP leaderboard"):
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(500)
        page.goto(f"{url}?match={match_id}")
        page.wait_for_function("() => window.__replayReady === true", timeout=120_000)
        page.locator("#replay-viewer .nr-play").click()
        measured = page.evaluate("""() => new Promise((done) => {
            let frames = 0; const t0 = performance.now(); const tick0 = window.__replayTick;
            const count = (now) => { frames += 1; if (now - t0 < 3000) requestAnimationFrame(count);
              else done({fps: frames * 1000 / (now - t0), ticks: (window.__replayTick - tick0) * 1000 / (now - t0)}); };
            requestAnimationFrame(count); })""")
        speed = float(page.locator("#replay-viewer .nr-speed").input_value())
        figures["replay_fps_in_space"] = round(measured["fps"], 1)
        figures["replay_rate"] = round(measured["ticks"] / speed, 3)
        heap = cdp.send("Runtime.getHeapUsage")
        figures["replay_tab_mb"] = round(heap["usedSize"] / 2**20, 1)
        context.close()
        browser.close()
    return figures


def gradio_floor(url: str, repeats: int) -> float:
    """Median ms from navigation to the first row of a bare Gradio app serving the first page
    of the Space's PvP table (`url`'s `/pvp_table`) as a static Dataframe: what no page made
    with this Gradio can beat here."""
    import gradio as gr
    from gradio_client import Client
    from playwright.sync_api import sync_playwright

    from leaderboard.tables import PAGE_ROWS, PVP_COLUMNS, kinds

    sys.path.insert(0, str(PROJECT_ROOT / "tests"))
    from tests_support import BROWSER_ARGS, CHROMIUM, free_port

    answer = Client(url, verbose=False).predict(api_name="/pvp_table")
    frame = pd.DataFrame(answer["data"][:PAGE_ROWS], columns=answer["headers"])
    with gr.Blocks() as demo:
        gr.Dataframe(frame, datatype=kinds(PVP_COLUMNS), elem_id="pvp-table", interactive=False, wrap=True)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    times = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
            for _ in range(repeats):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/", wait_until="commit")
                times.append(shown_ms(page, ROWS)[0])
                context.close()
            browser.close()
    finally:
        demo.close()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=500)
    parser.add_argument("--matches", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=60.0, help="seconds the idle Space is watched")
    parser.add_argument("--tab-s", type=float, default=60.0, help="seconds an open tab is watched")
    parser.add_argument("--port", type=int, default=7871)
    parser.add_argument("--json", action="store_true", help="print the JSON line last (always printed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arena-ui-scale-") as tmp:
        data = Path(tmp)
        started = time.perf_counter()
        match_id = make_history(data / "history", revisions=args.revisions, matches=args.matches)
        print(f"history: {args.matches:,} synthetic matches of {args.revisions} policies and one real one, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        url = f"http://127.0.0.1:{args.port}/"
        started = time.perf_counter()
        space = start_space(data, args.port)
        try:
            wait_served(url)
            from playwright.sync_api import sync_playwright

            sys.path.insert(0, str(PROJECT_ROOT / "tests"))
            from tests_support import BROWSER_ARGS, CHROMIUM

            with sync_playwright() as p:  # the first page with its rows: the Space is up
                browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
                page = browser.new_page()
                page.goto(url)
                page.wait_for_selector(ROWS, timeout=600_000)
                first_page_s = time.perf_counter() - started
                # the whole-history columns (a long history's are fitted after its first page),
                # and every match in the Hub dataset (this Space pushes the history it was given
                # there first): every figure below is of a settled Space, nothing happening
                page.wait_for_function("([t, p]) => { const s = document.querySelector('#pvp-source');"
                                       " return s && s.innerText.includes(p) && !s.innerText.includes(t); }",
                                       arg=[FITTING_MARK, PUSHED_MARK], timeout=1_800_000)
                settled_s = time.perf_counter() - started
                browser.close()
            figures: dict[str, Any] = {"revisions": args.revisions, "matches": args.matches,
                                       "first_page_s": round(first_page_s, 1), "settled_s": round(settled_s, 1)}
            middle = args.revisions // 2  # policies in the middle of the field, each visited once
            policies = [f"sim/policy-{middle + k:04d}" for k in range(args.repeats)]
            figures.update(visitor(url, match_id, policies, args.repeats, args.tab_s))
            figures["gradio_floor_ms"] = round(gradio_floor(url, args.repeats), 1)
            figures["pvp_rows_over_floor"] = round(figures["pvp_table_ready_ms"] / figures["gradio_floor_ms"], 2)
            process = psutil.Process(space.pid)
            cpu0, _ = space_usage(process)
            time.sleep(args.idle_s)
            cpu1, rss = space_usage(process)
            figures["idle_cpu_s_per_min"] = round((cpu1 - cpu0) * 60 / args.idle_s, 2)
            figures["space_rss_mb"] = round(rss, 0)
        finally:
            os.killpg(space.pid, signal.SIGTERM)
            try:
                space.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(space.pid, signal.SIGKILL)
    for key, (sense, target) in TARGETS.items():
        value = figures.get(key)
        met = value is not None and (value <= target if sense == "<=" else value >= target)
        print(f"  {key:<22} {value!s:>10}   target {sense} {target}: {'met' if met else 'MISSED'}")
    print(f"  {'replay_rate':<22} {figures.get('replay_rate')!s:>10}   (1.0: the nominal rate)")
    for key in ("pvp_rows_harness_ms", "search_harness_ms", "sort_harness_ms", "policy_page_harness_ms"):
        print(f"  {key:<22} {figures.get(key)!s:>10}   (from Python: Playwright's polling and round trips included)")
    print(f"  {'policy_address_ms':<22} {figures.get('policy_address_ms')!s:>10}   (an address opened in a fresh tab: "
          "the whole app's start, like the rows)")
    print(f"  {'pvp_table_ready_ms':<22} {figures.get('pvp_table_ready_ms')!s:>10}   (Gradio's table, the rows a "
          "visitor can search and sort)")
    print(f"  {'gradio_floor_ms':<22} {figures.get('gradio_floor_ms')!s:>10}   (a bare Gradio page of the same rows; "
          f"the PvP page's Gradio table takes {figures.get('pvp_rows_over_floor')}x that)")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
