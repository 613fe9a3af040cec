// NMMO Arena replay viewer: runs inside a gr.HTML component (js_on_load).
// Gradio provides `element` (this component's root), `props`, `watch` and `server`
// (server.load_replay). The replay format is documented in arena/replay.py.
// Three levels, as the IJCAI viewer: the whole map with team trajectories; a close-up
// that follows one agent and shows its fights; the agent's numbers; team achievements.
// Below them a timeline marks kills, deaths and every team's faults (replay version 2:
// header.faults rows [tick, team, kind, message]; version 1 replays have none), a list
// gives each team's faults with tick and message (click: jump there), and the sandboxed
// teams' logs (server.load_logs, server.log_text) are shown per tick and downloadable.

(function () {
  const $ = (sel) => element.querySelector(sel);
  const MATERIAL_COLORS = {
    0: "#101010", 1: "#2f6fd6", 2: "#5c9e3a", 3: "#7aa34c", 4: "#2d7a2a", 5: "#7b7b7b",
    6: "#5a4e44", 7: "#b08d57", 8: "#6b4e2e", 9: "#1f5e1f", 10: "#9c7fd1", 11: "#c6a6ff",
    12: "#8fae5a", 13: "#6fd67a", 14: "#0e3e8e", 15: "#43b0e0",
  };
  const STYLE_COLORS = ["#ff5252", "#ffd740", "#b388ff"]; // melee, range, mage
  const SKILLS = ["", "melee", "range", "mage", "fishing", "herbalism", "prospecting", "carving", "alchemy"];
  const TEAM_COLORS = Array.from({ length: 16 }, (_, i) => `hsl(${(i * 360) / 16}, 85%, 55%)`);
  const FAULT_COLORS = { ERROR: "#ff5252", TIMEOUT: "#ffd740", INVALID: "#40c4ff", INIT: "#ff9100", CRASH: "#ff1744", MEMORY: "#e040fb" };
  const FAULTS_LISTED = 200; // per team in the list (the timeline shows all)

  let replay = null;   // {header, map, players, npcCount, npcs, ticks, size}
  let tick = 0;
  let playing = false;
  let speed = 16;      // ticks per second
  let agent = 1;       // followed agent id (1-based)
  let lastFrame = 0;
  let mapImage = null; // pre-rendered overview background
  let marks = null;    // {kills: [ticks], deaths: [ticks], faults: header.faults}
  let logs = null;     // {teams: [{slot, policy_id, lines: [[tick, stream, text]], ...}]} or null
  window.__replayTick = 0;
  window.__replayReady = false;
  window.__logsReady = false;

  // -- decoding ------------------------------------------------------------------------
  function b64ToBytes(text) {
    const raw = atob(text);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }

  async function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  const TYPED = { u1: Uint8Array, i1: Int8Array, u2: Uint16Array, i2: Int16Array, i4: Int32Array, u4: Uint32Array, f4: Float32Array, f8: Float64Array };

  function parse(raw) {
    const magic = String.fromCharCode(raw[0], raw[1], raw[2], raw[3]);
    if (magic !== "NMRP") throw new Error("not an NMMO Arena replay");
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const length = view.getUint32(4, true);
    const header = JSON.parse(new TextDecoder().decode(raw.subarray(8, 8 + length)));
    const base = raw.byteOffset + 8 + length;
    const arrays = {};
    for (const spec of header.arrays) {
      const Type = TYPED[spec.dtype];
      const count = spec.shape.reduce((a, b) => a * b, 1);
      arrays[spec.name] = { data: new Type(raw.buffer.slice(base + spec.offset, base + spec.offset + count * Type.BYTES_PER_ELEMENT)), shape: spec.shape };
    }
    return { header, arrays };
  }

  // -- state at a tick -----------------------------------------------------------------
  function playerAt(t, id) {
    const p = replay.arrays.players;
    const n = p.shape[1];
    const o = (t * n + (id - 1)) * 5;
    return { row: p.data[o], col: p.data[o + 1], health: p.data[o + 2], food: p.data[o + 3], water: p.data[o + 4] };
  }

  function teamOf(id) {
    return Math.floor((id - 1) / replay.teamSize);
  }

  function eventsUpTo(t, kind) {
    return replay.header.events.filter((e) => e[0] <= t && e[1] === kind);
  }

  function achievementsAt(t) {
    const teams = replay.header.policies.map(() => ({ travel: 0, forage: 0, equipment: 0, eliminate: 0 }));
    for (const [tk, team, task, , points] of replay.header.tiers) {
      if (tk <= t && points > teams[team][task]) teams[team][task] = points;
    }
    return teams;
  }

  // -- drawing -------------------------------------------------------------------------
  function renderMap() {
    const size = replay.size;
    const canvas = document.createElement("canvas");
    canvas.width = size;
    canvas.height = size;
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(size, size);
    const map = replay.arrays.map.data;
    for (let i = 0; i < size * size; i++) {
      const color = MATERIAL_COLORS[map[i]] || "#000000";
      const value = parseInt(color.slice(1), 16);
      image.data[i * 4] = (value >> 16) & 255;
      image.data[i * 4 + 1] = (value >> 8) & 255;
      image.data[i * 4 + 2] = value & 255;
      image.data[i * 4 + 3] = 255;
    }
    ctx.putImageData(image, 0, 0);
    return canvas;
  }

  function drawOverview() {
    const canvas = $(".nr-overview");
    const ctx = canvas.getContext("2d");
    const scale = canvas.width / replay.size;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(mapImage, 0, 0, canvas.width, canvas.height);
    const n = replay.header.num_agents;
    const stride = Math.max(1, Math.floor(tick / 200));
    for (let id = 1; id <= n; id++) {   // trajectories, faint
      ctx.strokeStyle = TEAM_COLORS[teamOf(id) % 16];
      ctx.globalAlpha = 0.35;
      ctx.beginPath();
      let started = false;
      for (let t = 0; t <= tick; t += stride) {
        const p = playerAt(t, id);
        if (p.health === 0) break;
        const x = (p.col + 0.5) * scale, y = (p.row + 0.5) * scale;
        if (!started) { ctx.moveTo(x, y); started = true; } else ctx.lineTo(x, y);
      }
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    for (let id = 1; id <= n; id++) {   // current positions
      const p = playerAt(tick, id);
      if (p.health === 0) continue;
      ctx.fillStyle = TEAM_COLORS[teamOf(id) % 16];
      ctx.fillRect(p.col * scale - 1, p.row * scale - 1, scale + 2, scale + 2);
    }
    const me = playerAt(tick, agent);
    if (me.health > 0) {
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 2;
      ctx.strokeRect((me.col - 7) * scale, (me.row - 7) * scale, 15 * scale, 15 * scale);
      ctx.lineWidth = 1;
    }
  }

  function drawCloseUp() {
    const canvas = $(".nr-closeup");
    const ctx = canvas.getContext("2d");
    const cell = canvas.width / 15;
    const me = playerAt(tick, agent);
    const last = lastAlive(agent);
    const centre = me.health > 0 ? me : playerAt(last, agent);
    const top = centre.row - 7, left = centre.col - 7;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(mapImage, left, top, 15, 15, 0, 0, canvas.width, canvas.height);
    const inView = (r, c) => r >= top && r < top + 15 && c >= left && c < left + 15;
    const position = {};
    const npcs = replay.arrays.npcs, width = npcs.shape[1], count = replay.arrays.npc_count.data[tick];
    for (let i = 0; i < count; i++) {
      const o = (tick * width + i) * 4;
      const id = npcs.data[o], r = npcs.data[o + 1], c = npcs.data[o + 2];
      position[id] = [r, c];
      if (!inView(r, c)) continue;
      ctx.fillStyle = "#d0d0d0";
      ctx.beginPath();
      ctx.arc((c - left + 0.5) * cell, (r - top + 0.5) * cell, cell * 0.3, 0, 2 * Math.PI);
      ctx.fill();
    }
    for (let id = 1; id <= replay.header.num_agents; id++) {
      const p = playerAt(tick, id);
      if (p.health === 0) continue;
      position[id] = [p.row, p.col];
      if (!inView(p.row, p.col)) continue;
      ctx.fillStyle = TEAM_COLORS[teamOf(id) % 16];
      ctx.fillRect((p.col - left + 0.15) * cell, (p.row - top + 0.15) * cell, cell * 0.7, cell * 0.7);
      ctx.fillStyle = "#00e676";   // health bar
      ctx.fillRect((p.col - left + 0.1) * cell, (p.row - top) * cell, (cell * 0.8 * p.health) / 100, 3);
      if (id === agent) {
        ctx.strokeStyle = "#ffffff";
        ctx.lineWidth = 2;
        ctx.strokeRect((p.col - left + 0.1) * cell, (p.row - top + 0.1) * cell, cell * 0.8, cell * 0.8);
        ctx.lineWidth = 1;
      }
    }
    const fights = [];
    for (const [t, kind, attacker, target, style, damage] of replay.header.events) {   // this tick's hits
      if (t !== tick || kind !== "hit") continue;
      const a = position[attacker], b = position[target];
      if (!a || !b || !(inView(a[0], a[1]) || inView(b[0], b[1]))) continue;
      ctx.strokeStyle = STYLE_COLORS[(style - 1) % 3] || "#ffffff";
      ctx.lineWidth = 3;
      ctx.beginPath();
      ctx.moveTo((a[1] - left + 0.5) * cell, (a[0] - top + 0.5) * cell);
      ctx.lineTo((b[1] - left + 0.5) * cell, (b[0] - top + 0.5) * cell);
      ctx.stroke();
      ctx.lineWidth = 1;
      fights.push(`${name(attacker)} hits ${name(target)} (${["melee", "range", "mage"][(style - 1) % 3]}, ${damage})`);
    }
    $(".nr-fights").textContent = fights.length ? fights.join("\n") : "no fight in view this tick";
  }

  function lastAlive(id) {
    for (let t = tick; t >= 0; t--) if (playerAt(t, id).health > 0) return t;
    return 0;
  }

  function name(id) {
    return id > 0 ? `agent ${id} (team ${teamOf(id)})` : `NPC ${-id}`;
  }

  function drawPanel() {
    const p = playerAt(tick, agent);
    const skills = {};
    for (const [, , who, skill, level] of eventsUpTo(tick, "level")) if (who === agent) skills[SKILLS[skill]] = level;
    const equipment = eventsUpTo(tick, "equip").filter((e) => e[2] === agent).map((e) => `type ${e[3]} lvl ${e[4]}`);
    const killed = eventsUpTo(tick, "kill").find((e) => e[3] === agent);
    const lines = [
      `${name(agent)}: ${replay.header.policies[teamOf(agent)]}`,
      killed ? `killed at tick ${killed[0]} by ${name(killed[2])}` : p.health > 0 ? "alive" : "dead",
      `health ${p.health}  food ${p.food}  water ${p.water}`,
      "skills: " + (Object.entries(skills).map(([k, v]) => `${k} ${v}`).join(", ") || "all level 1"),
      "equipped: " + (equipment.slice(-4).join(", ") || "nothing"),
    ];
    $(".nr-panel").textContent = lines.join("\n");
    const teams = achievementsAt(tick);
    const faultsSoFar = teams.map(() => 0);
    for (const [t, team] of replay.header.faults) if (t <= tick && team < faultsSoFar.length) faultsSoFar[team]++;
    const rows = teams.map((t, i) => ({ i, total: t.travel + t.forage + t.equipment + t.eliminate, ...t }))
      .sort((a, b) => b.total - a.total);
    $(".nr-teams").innerHTML = "<tr><th>team</th><th>policy</th><th>total</th><th>trv</th><th>for</th><th>eqp</th><th>elm</th><th>faults</th></tr>" +
      rows.map((r) => `<tr data-team="${r.i}"><td style="color:${TEAM_COLORS[r.i % 16]}">■ ${r.i}</td><td>${escapeHtml(replay.header.policies[r.i])}</td><td>${r.total}</td><td>${r.travel}</td><td>${r.forage}</td><td>${r.equipment}</td><td>${r.eliminate}</td><td>${faultsSoFar[r.i] || ""}</td></tr>`).join("");
    drawLogLines();
  }

  // -- timeline, faults, logs ----------------------------------------------------------
  function computeMarks() {
    const kills = [], deaths = [];
    for (const e of replay.header.events) if (e[1] === "kill") kills.push(e[0]);
    for (let id = 1; id <= replay.header.num_agents; id++) {
      for (let t = 1; t <= replay.ticks; t++) if (playerAt(t, id).health === 0 && playerAt(t - 1, id).health > 0) { deaths.push(t); break; }
    }
    return { kills, deaths, faults: replay.header.faults };
  }

  function tickX(t, width) {
    return replay.ticks ? 2 + ((width - 4) * t) / replay.ticks : 2;
  }

  function drawTimeline() {
    const canvas = $(".nr-timeline");
    const ctx = canvas.getContext("2d");
    const w = canvas.width, h = canvas.height;
    ctx.fillStyle = "#161616";
    ctx.fillRect(0, 0, w, h);
    ctx.fillStyle = "#2a2a2a";
    ctx.fillRect(0, h / 2 - 1, w, 1);
    const line = (t, color, y0, y1, width) => {
      ctx.fillStyle = color;
      ctx.fillRect(Math.round(tickX(t, w) - width / 2), y0, width, y1 - y0);
    };
    const x = Math.round(tickX(tick, w));
    ctx.fillStyle = "#00e676";  // where we are: a line under the markers, a notch above them
    ctx.fillRect(x - 1, 0, 2, h);
    for (const t of marks.deaths) line(t, "#888888", 4, h / 2 - 2, 1);
    for (const t of marks.kills) line(t, "#ffffff", 4, h / 2 - 2, 1);
    for (const [t, , kind] of marks.faults) line(t, FAULT_COLORS[kind] || "#ff5252", h / 2 + 1, h - 4, 3);
    ctx.beginPath();
    ctx.moveTo(x - 4, 0); ctx.lineTo(x + 4, 0); ctx.lineTo(x, 4); ctx.closePath();
    ctx.moveTo(x - 4, h); ctx.lineTo(x + 4, h); ctx.lineTo(x, h - 4); ctx.closePath();
    ctx.fill();
  }

  function renderFaults() {
    const faults = replay.header.faults;
    window.__replayFaults = faults.length;
    if (!faults.length) {
      $(".nr-faults").textContent = replay.header.version >= 2 ? "no team faulted in this match" :
        "this replay was recorded before faults were kept in replays (the match record still has them)";
      return;
    }
    const byTeam = new Map();
    for (const f of faults) { if (!byTeam.has(f[1])) byTeam.set(f[1], []); byTeam.get(f[1]).push(f); }
    let html = "<table><tr><th>tick</th><th>kind</th><th>message</th></tr>";
    for (const team of [...byTeam.keys()].sort((a, b) => a - b)) {
      const list = byTeam.get(team);
      const counts = {};
      for (const f of list) counts[f[2]] = (counts[f[2]] || 0) + 1;
      const summary = Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ");
      html += `<tr class="nr-team-faults" data-team="${team}"><th class="nr-team-head" colspan="3"><span style="color:${TEAM_COLORS[team % 16]}">■</span> team ${team}: ${escapeHtml(replay.header.policies[team])} (${summary})</th></tr>`;
      for (const [t, , kind, message] of list.slice(0, FAULTS_LISTED)) {
        html += `<tr class="nr-fault" data-tick="${t}" data-team="${team}"><td>${t}</td><td class="nr-kind" style="--kind:${FAULT_COLORS[kind] || "#ff5252"}">${escapeHtml(kind)}</td><td>${escapeHtml(message)}</td></tr>`;
      }
      if (list.length > FAULTS_LISTED) html += `<tr><td></td><td colspan="2">... ${list.length - FAULTS_LISTED} more (all are on the timeline)</td></tr>`;
    }
    $(".nr-faults").innerHTML = html + "</table>";
  }

  function followTeam(team, t) {
    // follow a member of `team` alive at tick t (else its first member)
    const first = team * replay.teamSize + 1;
    agent = first;
    for (let id = first; id < first + replay.teamSize; id++) if (playerAt(t, id).health > 0) { agent = id; break; }
    $(".nr-agent").value = String(agent);
  }

  function jumpToFault(t, team) {
    playing = false;
    $(".nr-play").textContent = "Play";
    followTeam(team, t);
    setTick(t);
    for (const row of element.querySelectorAll(".nr-faults tr.nr-fault")) {
      row.classList.toggle("nr-current", row.dataset.tick === String(t) && row.dataset.team === String(team));
    }
  }

  function renderLogs() {
    const box = $(".nr-logs");
    const sandboxed = new Set((logs && logs.teams || []).map((t) => t.slot));
    const builtins = replay.header.policies.filter((p) => p.startsWith("builtin:")).length;
    const note = builtins ? `<div>${builtins} built-in team${builtins > 1 ? "s" : ""} play in the match process: they have no logs.</div>` : "";
    if (logs && logs.error) { box.innerHTML = `<div>${escapeHtml(logs.error)}</div>`; return; }
    if (!sandboxed.size) {
      box.innerHTML = `<div>No logs recorded for this match: only sandboxed (submitted) teams have logs.</div>${note}`;
      return;
    }
    const links = logs.teams.map((t) => {
      const kept = t.dropped_bytes ? `, ${t.dropped_bytes} bytes dropped` : "";
      return `<div><span style="color:${TEAM_COLORS[t.slot % 16]}">■</span> <a href="#" class="nr-log-download" data-slot="${t.slot}">⬇ team ${t.slot} log</a> ` +
        `${escapeHtml(t.policy_id)}: ${t.lines.length} lines, ${t.total_bytes} bytes written${kept}</div>`;
    }).join("");
    const first = logs.teams[0];
    box.innerHTML = `<div>Each team's first ${Math.round(first.head_bytes / 1024)} KiB and last ${Math.round(first.tail_bytes / 1024)} KiB of output are kept, every line with its tick and stream.</div>` +
      links + `<div><a href="#" class="nr-log-download" data-slot="all">⬇ all teams' logs</a></div>` + note;
  }

  function drawLogLines() {
    const pre = $(".nr-log-lines");
    if (!logs || !logs.teams) { pre.textContent = ""; return; }
    const team = teamOf(agent);
    const log = logs.teams.find((t) => t.slot === team);
    if (!log) { pre.textContent = `team ${team} has no log (${replay.header.policies[team].startsWith("builtin:") ? "a built-in team" : "not sandboxed"})`; return; }
    const lines = log.lines.filter((l) => l[0] === tick).slice(0, 40);
    pre.textContent = `team ${team} output during tick ${tick}:\n` +
      (lines.length ? lines.map((l) => `${l[1]} | ${l[2]}`).join("\n") : "(nothing)");
  }

  async function download(slot) {
    const answer = await server.log_text({ match_id: replay.header.match_id, slot: String(slot) });
    if (!answer || answer.error) { $(".nr-status").textContent = answer ? answer.error : "no answer from the server"; return; }
    const url = URL.createObjectURL(new Blob([answer.text], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = answer.filename;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  async function loadLogs(matchId) {
    try {
      logs = await server.load_logs({ match_id: matchId });
    } catch (err) {
      logs = { error: `could not fetch the logs of ${matchId}: ${err}` };
    }
    if (!replay || replay.header.match_id !== matchId) return;
    renderLogs();
    drawLogLines();
    window.__logsReady = true;
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  function draw() {
    if (!replay) return;
    drawOverview();
    drawCloseUp();
    drawPanel();
    drawTimeline();
    $(".nr-tick").textContent = `tick ${tick} / ${replay.ticks}`;
    $(".nr-scrub").value = String(tick);
    window.__replayTick = tick;
    followAddress();
  }

  // -- the address follows the tick, so that a copied URL reopens this moment (arena/links.py);
  // at most every 300 ms (browsers throttle history updates); on a Space, the parent page's too
  let addressPending = false;
  function followAddress() {
    if (!replay || addressPending) return;
    addressPending = true;
    setTimeout(() => {
      addressPending = false;
      if (!replay) return;
      const params = new URLSearchParams(window.location.search);
      for (const other of ["tab", "q", "policy"]) params.delete(other);
      params.set("match", replay.header.match_id);
      params.set("tick", String(tick));
      const query = params.toString();
      window.history.replaceState(window.history.state, "", `${window.location.pathname}?${query}`);
      if (window.parent !== window) window.parent.postMessage({ queryString: query }, "https://huggingface.co");
    }, 300);
  }

  // -- playback ------------------------------------------------------------------------
  function setTick(t) {
    tick = Math.max(0, Math.min(replay.ticks, t));
    draw();
  }

  function loop(now) {
    if (playing && replay) {
      if (!lastFrame) lastFrame = now;
      const advance = Math.floor(((now - lastFrame) * speed) / 1000);
      if (advance > 0) {
        // keep the fraction of a tick for the next frame (rounding it away played 8% slow);
        // after a stall (a hidden tab) start afresh rather than race to catch up
        lastFrame = Math.max(lastFrame + (advance * 1000) / speed, now - 250);
        if (tick >= replay.ticks) playing = false;
        setTick(tick + advance);
        $(".nr-play").textContent = playing ? "Pause" : "Play";
      }
    } else {
      lastFrame = 0;
    }
    requestAnimationFrame(loop);
  }
  requestAnimationFrame(loop);

  function eventTicks() {
    const kinds = $(".nr-jump-kind").value;
    const ticks = new Set();
    if (kinds === "kills") for (const e of replay.header.events) if (e[1] === "kill") ticks.add(e[0]);
    if (kinds === "deaths") for (let id = 1; id <= replay.header.num_agents; id++) {
      for (let t = 1; t <= replay.ticks; t++) if (playerAt(t, id).health === 0 && playerAt(t - 1, id).health > 0) { ticks.add(t); break; }
    }
    if (kinds === "tiers") for (const e of replay.header.tiers) ticks.add(e[0]);
    if (kinds === "faults") for (const f of replay.header.faults) ticks.add(f[0]);
    return [...ticks].sort((a, b) => a - b);
  }

  function jump(direction) {
    const ticks = eventTicks();
    const next = direction > 0 ? ticks.find((t) => t > tick) : [...ticks].reverse().find((t) => t < tick);
    if (next !== undefined) {
      if ($(".nr-jump-kind").value === "faults") {
        const fault = replay.header.faults.find((f) => f[0] === next);
        jumpToFault(next, fault[1]);
        return;
      }
      const kill = replay.header.events.find((e) => e[0] === next && e[1] === "kill");
      if (kill && kill[3] > 0) agent = kill[3];
      $(".nr-agent").value = String(agent);
      setTick(next);
    }
  }

  // -- loading -------------------------------------------------------------------------
  function fail(message) {
    // Whatever went wrong, say it where the replay would be: never leave "loading ..." up.
    replay = null;
    playing = false;
    window.__replayReady = false;
    window.__replayError = message;
    $(".nr-faults").textContent = "no replay loaded";
    $(".nr-logs").textContent = "no replay loaded";
    $(".nr-log-lines").textContent = "";
    $(".nr-status").textContent = message;
    $(".nr-tick").textContent = "no replay loaded";
  }

  async function load(matchId, startTick) {
    if (!matchId) return;
    $(".nr-status").textContent = `loading ${matchId} ...`;
    window.__replayReady = false;
    window.__replayError = null;
    const started = performance.now();
    let answer;
    try {
      answer = await server.load_replay({ match_id: matchId });
    } catch (err) {
      fail(`could not fetch the replay of ${matchId}: ${err}`);
      return;
    }
    if (!answer || answer.error) {
      fail(answer ? answer.error : "no answer from the server");
      return;
    }
    let decoded;
    try {
      decoded = parse(await gunzip(b64ToBytes(answer.data)));
      if (!decoded.arrays.map || !decoded.arrays.players) throw new Error("arrays missing");
    } catch (err) {
      fail(`this replay is damaged and cannot be played (${err.message || err})`);
      return;
    }
    const { header, arrays } = decoded;
    header.faults = header.faults || [];   // version 1: no fault events
    replay = { header, arrays, ticks: header.ticks, size: arrays.map.shape[0], teamSize: header.teams["0"].length };
    mapImage = renderMap();
    marks = computeMarks();
    logs = null;
    window.__logsReady = false;
    renderFaults();
    $(".nr-logs").textContent = "loading the logs ...";
    const select = $(".nr-agent");
    select.innerHTML = "";
    for (let id = 1; id <= header.num_agents; id++) {
      const option = document.createElement("option");
      option.value = String(id);
      option.textContent = `${id} (team ${teamOf(id)})`;
      select.appendChild(option);
    }
    agent = 1;
    $(".nr-scrub").max = String(header.ticks);
    playing = false;
    $(".nr-play").textContent = "Play";
    setTick(Number(startTick) || 0);
    window.__replayReady = true;
    window.__replayLoadMs = performance.now() - started;
    $(".nr-status").textContent = `match ${header.match_id}: ${header.ticks} ticks, ${header.faults.length} faults, loaded in ${Math.round(window.__replayLoadMs)} ms`;
    loadLogs(header.match_id);
  }

  $(".nr-play").addEventListener("click", () => {
    if (!replay) return;
    if (tick >= replay.ticks) setTick(0);
    playing = !playing;
    $(".nr-play").textContent = playing ? "Pause" : "Play";
  });
  $(".nr-scrub").addEventListener("input", (e) => { if (replay) { playing = false; $(".nr-play").textContent = "Play"; setTick(parseInt(e.target.value, 10)); } });
  $(".nr-speed").addEventListener("change", (e) => { speed = parseInt(e.target.value, 10); });
  $(".nr-agent").addEventListener("change", (e) => { agent = parseInt(e.target.value, 10); draw(); });
  $(".nr-prev").addEventListener("click", () => replay && jump(-1));
  $(".nr-next").addEventListener("click", () => replay && jump(1));
  $(".nr-timeline").addEventListener("click", (e) => {
    if (!replay) return;
    const rect = e.target.getBoundingClientRect();
    const x = ((e.clientX - rect.left) * e.target.width) / rect.width;
    let best = null, bestDistance = 5;   // a fault marker within 5 px wins
    for (const f of marks.faults) {
      const d = Math.abs(tickX(f[0], e.target.width) - x);
      if (d < bestDistance) { bestDistance = d; best = f; }
    }
    if (best) { jumpToFault(best[0], best[1]); return; }
    playing = false;
    $(".nr-play").textContent = "Play";
    setTick(Math.round(((x - 2) * replay.ticks) / (e.target.width - 4)));
  });
  $(".nr-faults").addEventListener("click", (e) => {
    const row = e.target.closest("tr.nr-fault");
    if (row && replay) jumpToFault(parseInt(row.dataset.tick, 10), parseInt(row.dataset.team, 10));
  });
  $(".nr-logs").addEventListener("click", (e) => {
    const link = e.target.closest("a.nr-log-download");
    if (!link || !replay) return;
    e.preventDefault();
    download(link.dataset.slot).catch((err) => { $(".nr-status").textContent = `the log could not be downloaded: ${err.message || err}`; });
  });
  $(".nr-overview").addEventListener("click", (e) => {
    if (!replay) return;
    const rect = e.target.getBoundingClientRect();
    const scale = rect.width / replay.size;
    const col = (e.clientX - rect.left) / scale, row = (e.clientY - rect.top) / scale;
    let best = null, bestDistance = 1e9;
    for (let id = 1; id <= replay.header.num_agents; id++) {
      const p = playerAt(tick, id);
      if (p.health === 0) continue;
      const d = Math.abs(p.row - row) + Math.abs(p.col - col);
      if (d < bestDistance) { bestDistance = d; best = id; }
    }
    if (best) { agent = best; $(".nr-agent").value = String(agent); draw(); }
  });

  const start = (value) => load(value && value.match_id, value && value.tick).catch((err) => fail(`the replay could not be shown: ${err.message || err}`));
  watch("value", () => start(props.value));
  if (props.value && props.value.match_id) start(props.value);
})();
