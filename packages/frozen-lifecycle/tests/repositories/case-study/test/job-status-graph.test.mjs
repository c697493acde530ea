import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  applyTransition,
  canTransition,
  STATES,
} from "../src/job-status.js";

const graph = JSON.parse(
  readFileSync(new URL("../contracts/job-status-graph.json", import.meta.url), "utf8")
);

const src = readFileSync(
  new URL("../src/job-status.js", import.meta.url),
  "utf8"
);

test("worker states equal the frozen graph", () => {
  assert.deepEqual([...STATES].sort(), [...graph.states].sort());
});

test("every declared edge is accepted", () => {
  for (const edge of graph.transitions) {
    assert.equal(canTransition(edge.from, edge.to), true, `${edge.from}->${edge.to}`);
  }
});

test("undeclared edges are rejected", () => {
  const allowed = new Set(graph.transitions.map((e) => `${e.from}->${e.to}`));
  for (const from of graph.states) {
    for (const to of graph.states) {
      if (from === to) continue;
      const key = `${from}->${to}`;
      if (!allowed.has(key)) {
        assert.equal(canTransition(from, to), false, key);
      }
    }
  }
});

test("terminal states do not leave the graph", () => {
  for (const term of graph.terminal) {
    for (const to of graph.states) {
      if (to === term) continue;
      assert.equal(canTransition(term, to), false, `${term}->${to}`);
    }
  }
});

test("applyTransition throws on illegal moves", () => {
  assert.throws(() =>
    applyTransition({ id: "job_1", status: "succeeded" }, "running")
  );
});

test("source does not mention forbidden status aliases", () => {
  for (const alias of graph.forbidden_aliases) {
    assert.equal(src.includes(`"${alias}"`) || src.includes(`'${alias}'`), false, alias);
  }
});
