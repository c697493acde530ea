// reportexport's page behaviour, loaded by every page. No inline script anywhere: the pages
// describe what they want with data- attributes and this file does it.
"use strict";

const Format = (() => {
  // The page's own language, not the browser's: an English page writes English dates and
  // numbers (the reader's time zone still applies).
  const LANGUAGE = document.documentElement.lang || "en";
  const relative = new Intl.RelativeTimeFormat(LANGUAGE, { numeric: "auto" });
  const exact = new Intl.DateTimeFormat(LANGUAGE, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
  });
  const steps = [
    ["year", 365 * 86400], ["month", 30 * 86400], ["week", 7 * 86400],
    ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1],
  ];

  function ago(date, now = Date.now()) {
    const seconds = (date.getTime() - now) / 1000;
    if (Math.abs(seconds) < 5) return "just now";
    for (const [unit, size] of steps) {
      if (Math.abs(seconds) >= size || unit === "second") {
        return relative.format(Math.round(seconds / size), unit);
      }
    }
    return "";
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "";
    if (seconds < 10) return `${seconds.toFixed(1)} s`;
    if (seconds < 60) return `${Math.round(seconds)} s`;
    const whole = Math.round(seconds);
    const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
    if (h) return `${h} h ${String(m).padStart(2, "0")} min`;
    return `${m} min ${String(s).padStart(2, "0")} s`;
  }

  function bytes(count) {
    if (count === null || count === undefined) return "";
    if (count < 1000) return `${count} ${count === 1 ? "byte" : "bytes"}`;
    const units = ["kB", "MB", "GB", "TB"];
    let value = count, unit = -1;
    while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
    return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
  }

  function plural(count, one, many) {
    return `${count.toLocaleString(LANGUAGE)} ${count === 1 ? one : (many || one + "s")}`;
  }

  return { ago, duration, bytes, plural, exact };
})();

function showTimes(root = document) {
  for (const node of root.querySelectorAll("time[datetime][data-style]")) {
    const when = new Date(node.getAttribute("datetime"));
    if (Number.isNaN(when.getTime())) continue;
    node.title = Format.exact.format(when);
    if (node.dataset.style === "exact") node.textContent = Format.exact.format(when);
    else node.textContent = Format.ago(when);
  }
}

// Destructive actions confirm in a dialog; without this script the server asks on a page.
function confirmForms(root = document) {
  for (const form of root.querySelectorAll("form[data-confirm]")) {
    if (form.dataset.confirmBound) continue;
    form.dataset.confirmBound = "1";
    form.addEventListener("submit", (event) => {
      if (form.dataset.confirmed === "1") return;
      event.preventDefault();
      ask(form.dataset.confirm, form.dataset.confirmAction || "Confirm").then((yes) => {
        if (!yes) return;
        const field = form.querySelector("input[name=confirmed]");
        if (field) field.value = "yes";
        form.dataset.confirmed = "1";
        form.requestSubmit ? form.requestSubmit() : form.submit();
      });
    });
  }
}

function ask(question, action) {
  return new Promise((resolve) => {
    const dialog = document.createElement("dialog");
    dialog.className = "confirm";
    dialog.setAttribute("aria-labelledby", "confirm-question");
    const text = document.createElement("p");
    text.id = "confirm-question";
    text.textContent = question;
    const buttons = document.createElement("div");
    buttons.className = "row";
    const keep = document.createElement("button");
    keep.type = "button";
    keep.textContent = "Keep it";
    const go = document.createElement("button");
    go.type = "button";
    go.className = "danger";
    go.textContent = action;
    buttons.append(keep, go);
    dialog.append(text, buttons);
    document.body.append(dialog);
    const finish = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    keep.addEventListener("click", () => finish(false));
    go.addEventListener("click", () => finish(true));
    dialog.addEventListener("cancel", () => finish(false));
    dialog.showModal();
    keep.focus();
  });
}

function copyButtons(root = document) {
  for (const button of root.querySelectorAll("button[data-copy]")) {
    if (button.dataset.copyBound) continue;
    button.dataset.copyBound = "1";
    button.hidden = false;
    button.addEventListener("click", async () => {
      const target = document.getElementById(button.dataset.copy);
      if (!target) return;
      try {
        await navigator.clipboard.writeText(target.textContent.trim());
        button.textContent = "Copied";
      } catch (_) {
        const range = document.createRange();
        range.selectNodeContents(target);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
}

function autoSubmit(root = document) {
  for (const control of root.querySelectorAll("[data-autosubmit]")) {
    control.addEventListener("change", () => control.form.submit());
    const fallback = control.form.querySelector("[data-autosubmit-fallback]");
    if (fallback) fallback.hidden = true;
  }
}

// Timestamp pickers are written in UTC, which a page without script takes as it is. Here they
// show and take the reader's own time, as the rest of the page does: the values and bounds are
// turned into local time, the hint says so, and the form sends the instant with its `Z`.
function pad(number) {
  return String(number).padStart(2, "0");
}

function localText(moment) {
  return `${moment.getFullYear()}-${pad(moment.getMonth() + 1)}-${pad(moment.getDate())}` +
    `T${pad(moment.getHours())}:${pad(moment.getMinutes())}:${pad(moment.getSeconds())}`;
}

function fromUtcText(text) {
  const moment = new Date(`${text}Z`);
  return Number.isNaN(moment.getTime()) ? null : moment;
}

function utcText(localValue) {
  const moment = new Date(localValue); // a date and time without an offset is local time
  return Number.isNaN(moment.getTime()) ? localValue : moment.toISOString().replace(".000Z", "Z");
}

function localPickers(root = document) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  for (const input of root.querySelectorAll("input[type=datetime-local][data-utc]")) {
    if (input.dataset.localShown) continue;
    input.dataset.localShown = "1";
    for (const name of ["min", "max"]) {
      const bound = input.getAttribute(name) && fromUtcText(input.getAttribute(name));
      if (bound) input.setAttribute(name, localText(bound));
    }
    const value = input.value && fromUtcText(input.value);
    if (value) input.value = localText(value);
    const form = input.form;
    if (form && !form.dataset.utcBound) {
      form.dataset.utcBound = "1";
      form.addEventListener("formdata", (event) => {
        for (const picker of form.querySelectorAll("input[type=datetime-local][data-utc]")) {
          if (picker.name && picker.value) event.formData.set(picker.name, utcText(picker.value));
        }
      });
    }
  }
  for (const note of root.querySelectorAll("[data-picker-zone]")) {
    if (zone) note.textContent = ` in your time zone (${zone.replace(/_/g, " ")})`;
  }
}

// A time shown in a schedule's zone gets the reader's own time beside it when their zone is
// another.
function zonedTimes(root = document) {
  const mine = Intl.DateTimeFormat().resolvedOptions().timeZone;
  for (const node of root.querySelectorAll("time[datetime][data-zone]")) {
    if (node.dataset.zoneShown || !mine || node.dataset.zone === mine) continue;
    const when = new Date(node.getAttribute("datetime"));
    if (Number.isNaN(when.getTime())) continue;
    node.dataset.zoneShown = "1";
    const yours = document.createElement("span");
    yours.className = "muted";
    yours.textContent = ` (${Format.exact.format(when)} your time)`;
    node.after(yours);
  }
}

function enhance(root = document) {
  showTimes(root);
  zonedTimes(root);
  confirmForms(root);
  copyButtons(root);
  localPickers(root);
}

// On a phone the sections scroll sideways: the current one is kept in view.
function currentSectionInView() {
  const current = document.querySelector(".nav [aria-current=page]");
  if (current && current.parentElement.parentElement.scrollWidth > current.parentElement.parentElement.clientWidth) {
    current.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  enhance();
  currentSectionInView();
  autoSubmit();
  setInterval(() => showTimes(), 30000);
});

window.Reportexport = { Format, enhance, showTimes };
