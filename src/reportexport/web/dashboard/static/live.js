// Live pages: a job page and the list follow their unfinished jobs as they change.
// Server-Sent Events first (event `status`, one JSON state per job); when the stream is refused
// (too many open, a proxy that buffers) the page polls the same states every few seconds.
// Updating stops once every watched job is in a terminal state. When a job's status changes, the
// parts of its page that status changes (`data-live-part`: its facts, its timeline) are fetched
// again; the first page of the list, newest first, also takes in new exports (a schedule's, the
// API's, another tab's) every few seconds, and follows them too.
"use strict";

(() => {
  const POLL_MS = 2000;
  const NEW_MS = 5000;
  const { Format, enhance } = window.Reportexport;

  function watched() {
    return [...document.querySelectorAll("[data-live-job]")]
      .filter((node) => node.dataset.terminal !== "true")
      .map((node) => node.dataset.liveJob);
  }

  // Elapsed time ticks here between events; the server's figure resets it at each event.
  const clocks = new Map();
  function tick() {
    for (const [id, clock] of clocks) {
      const seconds = clock.base + (performance.now() - clock.at) / 1000;
      for (const node of document.querySelectorAll(`[data-live-job="${id}"] [data-field=elapsed]`)) {
        node.textContent = Format.duration(seconds);
      }
    }
  }

  function setText(scope, field, text) {
    for (const node of scope.querySelectorAll(`[data-field=${field}]`)) node.textContent = text;
  }

  function progressText(state) {
    if (state.elapsed_seconds === null) return "Nothing written yet";
    const parts = [];
    if (state.rows !== null) parts.push(Format.plural(state.rows, "row"));
    parts.push(Format.bytes(state.bytes));
    return parts.join(", ");
  }

  async function freshPage() {
    try {
      const response = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!response.ok) return null;
      return new DOMParser().parseFromString(await response.text(), "text/html");
    } catch (_) {
      return null; // the next change or step tries again
    }
  }

  // A running job's facts and timeline, as the server writes them now.
  async function refreshParts(scope) {
    const fresh = await freshPage();
    if (!fresh) return;
    for (const part of scope.querySelectorAll("[data-live-part]")) {
      const replacement = fresh.querySelector(`[data-live-part="${part.dataset.livePart}"]`);
      if (replacement) {
        part.replaceWith(replacement);
        enhance(replacement);
      }
    }
  }

  function show(state) {
    const scopes = document.querySelectorAll(`[data-live-job="${state.id}"]`);
    for (const scope of scopes) {
      const moved = scope.dataset.status && scope.dataset.status !== state.status;
      if (moved && !state.terminal && scope.querySelector("[data-live-part]")) refreshParts(scope);
      scope.dataset.status = state.status;
      for (const badge of scope.querySelectorAll("[data-field=status]")) {
        badge.textContent = state.status;
        badge.className = `state state-${state.status}`;
      }
      setText(scope, "progress", progressText(state));
      if (!state.terminal) {
        setText(scope, "phase", state.elapsed_seconds === null ? "Waiting for a worker." : "Writing the CSV.");
      }
      for (const node of scope.querySelectorAll("[data-field=running-for]")) {
        node.hidden = state.elapsed_seconds === null;
      }
      const bar = scope.querySelector("[data-field=bar]");
      const expected = Number(scope.dataset.estimateBytes || 0);
      if (bar && expected > 0 && !state.terminal) {
        const share = Math.min(0.99, state.bytes / expected);
        bar.classList.remove("unknown");
        bar.firstElementChild.style.width = `${(share * 100).toFixed(1)}%`;
        bar.setAttribute("aria-valuenow", String(Math.round(share * 100)));
        if (state.elapsed_seconds !== null && share > 0.02) {
          const left = Math.max(0, state.elapsed_seconds / share - state.elapsed_seconds);
          setText(scope, "remaining", `about ${Format.duration(left)} left`);
        }
      }
    }
    if (state.elapsed_seconds !== null && !state.terminal) {
      clocks.set(String(state.id), { base: state.elapsed_seconds, at: performance.now() });
    } else {
      clocks.delete(String(state.id));
    }
    if (state.terminal) finished(state, scopes);
  }

  // A finished job's page part is fetched again (timeline, download, side effects) and swapped
  // in place: the page itself is never reloaded.
  async function finished(state, scopes) {
    for (const scope of scopes) scope.dataset.terminal = "true";
    notify(state);
    const fresh = await freshPage();
    if (!fresh) return;
    for (const scope of document.querySelectorAll(`[data-live-job="${state.id}"]`)) {
      const key = scope.dataset.liveKey;
      const replacement = fresh.querySelector(`[data-live-job="${state.id}"][data-live-key="${key}"]`);
      if (replacement) {
        scope.replaceWith(replacement);
        enhance(replacement);
        replacement.dataset.terminal = "true";
      }
    }
  }

  function notify(state) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    if (localStorage.getItem("reportexport.notify") !== "yes") return;
    new Notification(`Export #${state.id} ${state.status}`, {
      body: state.title ? `${state.title}: ${progressText(state)}` : progressText(state),
      tag: `export-${state.id}`,
    });
  }

  function notifyButton() {
    const button = document.getElementById("notify");
    if (!button || !("Notification" in window)) return;
    const label = () => {
      const on = Notification.permission === "granted" && localStorage.getItem("reportexport.notify") === "yes";
      button.textContent = on ? "Browser notifications on" : "Browser notification when it ends";
      button.setAttribute("aria-pressed", on ? "true" : "false");
    };
    button.hidden = false;
    label();
    button.addEventListener("click", async () => {
      if (localStorage.getItem("reportexport.notify") === "yes" && Notification.permission === "granted") {
        localStorage.setItem("reportexport.notify", "no");
      } else {
        const answer = await Notification.requestPermission();
        localStorage.setItem("reportexport.notify", answer === "granted" ? "yes" : "no");
      }
      label();
    });
  }

  function receive(text) {
    const state = JSON.parse(text);
    show(state);
  }

  // Following the watched jobs: one event stream for all of them, opened again when the list
  // takes in a new one; polling instead, for good, once the stream is refused.
  let source = null;
  let timer = null;
  let polling = !("EventSource" in window);

  function poll(base) {
    const step = async () => {
      const ids = watched();
      if (!ids.length) { clearInterval(timer); timer = null; return; }
      try {
        const response = await fetch(`${base}?ids=${ids.join(",")}`, { headers: { Accept: "application/json" } });
        if (response.ok) for (const state of (await response.json()).jobs) show(state);
      } catch (_) { /* the next step tries again */ }
    };
    timer = setInterval(step, POLL_MS);
    step();
  }

  function follow(feed) {
    if (source) { source.close(); source = null; }
    if (timer) { clearInterval(timer); timer = null; }
    const ids = watched();
    if (!ids.length) return;
    if (polling) { poll(feed.dataset.livePoll); return; }
    const stream = new EventSource(`${feed.dataset.liveEvents}?ids=${ids.join(",")}`);
    source = stream;
    let failures = 0;
    stream.addEventListener("status", (event) => {
      failures = 0;
      receive(event.data);
      if (!watched().length) stream.close();
    });
    stream.onerror = () => {
      failures += 1;
      if (stream.readyState === EventSource.CLOSED || failures >= 3) {
        stream.close();
        if (source !== stream) return; // replaced by a newer stream meanwhile
        source = null;
        polling = true;
        if (watched().length) poll(feed.dataset.livePoll);
      }
    };
  }

  // The list's first page takes in exports made elsewhere since it was loaded, newest first.
  function takeInNew(feed) {
    if (!feed.hasAttribute("data-live-new")) return;
    setInterval(async () => {
      if (document.hidden) return; // a tab out of view asks nothing
      const fresh = await freshPage();
      const table = document.getElementById("jobs");
      const freshTable = fresh && fresh.getElementById("jobs");
      if (!table || !freshTable) return;
      const shown = new Set([...table.querySelectorAll("tr[data-job]")].map((row) => row.dataset.job));
      const added = [...freshTable.querySelectorAll("tbody tr[data-job]")].filter((row) => !shown.has(row.dataset.job));
      if (!added.length) return;
      if (!shown.size) {
        // The empty list had none of a list's parts (bulk cancel, its column): take them all.
        const bulk = fresh.getElementById("bulk-cancel");
        if (bulk && !document.getElementById("bulk-cancel")) feed.before(document.importNode(bulk, true));
        const adopted = document.importNode(freshTable, true);
        table.replaceWith(adopted);
        enhance(adopted);
        if (bulk) enhance(feed.parentElement);
      } else {
        const body = table.querySelector("tbody");
        const first = body.querySelector("tr[data-job]");
        for (const row of added) {
          const adopted = document.importNode(row, true);
          body.insertBefore(adopted, first);
          enhance(adopted);
        }
        const caption = freshTable.querySelector("caption");
        if (caption) table.querySelector("caption").textContent = caption.textContent;
      }
      if (added.some((row) => row.dataset.terminal !== "true")) follow(feed);
    }, NEW_MS);
  }

  function start() {
    const feed = document.querySelector("[data-live-events]");
    if (!feed) return;
    notifyButton();
    setInterval(tick, 1000);
    follow(feed);
    takeInNew(feed);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
