export type JobStatus = "queued" | "started" | "finished" | "failed" | "canceled";

export const STATES: readonly JobStatus[] = Object.freeze(["queued", "started", "finished", "failed", "canceled"]);
