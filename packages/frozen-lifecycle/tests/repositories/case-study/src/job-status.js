import { readFileSync } from "node:fs";

const graph = JSON.parse(
  readFileSync(new URL("../contracts/job-status-graph.json", import.meta.url), "utf8")
);

export const STATES = Object.freeze([...graph.states]);

const ALLOWED = new Set(graph.transitions.map((e) => `${e.from}->${e.to}`));
const TERMINAL = new Set(graph.terminal);

export function canTransition(from, to) {
  if (!STATES.includes(from) || !STATES.includes(to)) return false;
  return ALLOWED.has(`${from}->${to}`);
}

export function applyTransition(job, to, actor = "worker") {
  if (TERMINAL.has(job.status)) {
    throw new Error(`terminal:${job.status}`);
  }
  if (!canTransition(job.status, to)) {
    throw new Error(`illegal:${job.status}->${to}`);
  }
  const edge = graph.transitions.find((e) => e.from === job.status && e.to === to);
  if (edge.actor !== actor) {
    throw new Error(`actor:${actor}`);
  }
  return { ...job, status: to };
}
