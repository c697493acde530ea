"""The shop's exports, run as jobs on the lifecycle of contracts/job-status-graph.json."""
