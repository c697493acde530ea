import type { JobStatus } from "./jobStatus";

export type WorkerState = "idle" | "busy" | "started";

export function finish(job: { status: JobStatus }, ok: boolean) {
  if (job.status !== "started") {
    throw new Error(`illegal:${job.status}`);
  }
  return { ...job, status: ok ? "finished" : "failed" };
}

export function heartbeat(worker: { state: WorkerState }) {
  return worker.state === "idle";
}
