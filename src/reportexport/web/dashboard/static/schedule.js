// "Schedule this" on the New export form: the time zone starts at the browser's own, and the
// cron expression is said in words, with its next runs, as it is typed (the server reads it:
// the words are the schedule service's own). Without this script the schedule's page says the
// same once it is made.
"use strict";

(() => {
  const WAIT_MS = 300;

  function browserZone(select) {
    if (!select || !select.hasAttribute("data-browser-zone")) return;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && [...select.options].some((option) => option.value === zone)) select.value = zone;
  }

  function preview(input, zoneSelect) {
    const output = document.getElementById("schedule-description");
    const list = document.getElementById("schedule-preview");
    if (!input || !output || !list) return;
    let timer = null;
    let asked = 0;
    const ask = async () => {
      const number = ++asked;
      const query = new URLSearchParams({ cron: input.value, time_zone: zoneSelect ? zoneSelect.value : "UTC" });
      let answer;
      try {
        const response = await fetch(`${input.dataset.cronPreview}?${query}`, { headers: { Accept: "application/json" } });
        answer = { ok: response.ok, body: await response.json() };
      } catch (_) {
        return; // offline: the schedule's page says it after it is made
      }
      if (number !== asked) return; // a later keystroke asked again
      list.replaceChildren();
      if (!answer.ok) {
        output.textContent = answer.body.problem || "This expression cannot be read.";
        output.classList.add("invalid-text");
        list.hidden = true;
        return;
      }
      output.classList.remove("invalid-text");
      output.textContent = `${answer.body.description}. ${answer.body.period}`;
      for (const next of answer.body.next_times) {
        const item = document.createElement("li");
        item.textContent = next.local;
        list.append(item);
      }
      list.hidden = answer.body.next_times.length === 0;
    };
    const soon = () => { clearTimeout(timer); timer = setTimeout(ask, WAIT_MS); };
    input.addEventListener("input", soon);
    if (zoneSelect) zoneSelect.addEventListener("change", ask);
    const details = document.getElementById("schedule-this");
    if (details && !details.open) details.addEventListener("toggle", ask, { once: true });
    else ask();
  }

  document.addEventListener("DOMContentLoaded", () => {
    const zoneSelect = document.getElementById("schedule-time-zone");
    browserZone(zoneSelect);
    preview(document.getElementById("schedule-cron"), zoneSelect);
  });
})();
