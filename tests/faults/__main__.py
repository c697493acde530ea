"""`python -m tests.faults --runs 200`: the full fault suite; prints the table and exits 1 on any
violation (`./scripts/faults` runs it in the project's .venv)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.faults.suite import (
    FAULT_NAMES,
    SHORT_PLANS,
    RunResult,
    as_json,
    plan_runs,
    report,
    run_plans,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/faults", description=__doc__)
    parser.add_argument("--runs", type=int, default=len(FAULT_NAMES), help="how many runs")
    parser.add_argument("--seed", type=int, default=2026, help="the seed every run derives from")
    parser.add_argument("--short", action="store_true", help="the fixed short run of scripts/test")
    parser.add_argument(
        "--lanes", type=int, default=1, help="runs at once, each lane with its own PostgreSQL"
    )
    parser.add_argument("--rows", type=int, default=400_000, help="orders in the demo source")
    parser.add_argument(
        "--only", action="append", choices=FAULT_NAMES, help="every run starts with this fault"
    )
    parser.add_argument("--directory", type=Path, help="keep runs here (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep every run's logs")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args(argv)
    plans = SHORT_PLANS if args.short else plan_runs(args.runs, args.seed, args.only or ())
    if args.short and args.only:
        plans = [p for p in plans if set(p.faults) & set(args.only)]
    started = time.monotonic()

    def progress(result: RunResult) -> None:
        plan = result.plan
        print(
            f"run {plan.index:4} seed {plan.seed:10} {plan.store:5} {'+'.join(plan.faults):40} "
            f"{result.seconds:5.0f} s  {len(result.violations)} violations",
            flush=True,
        )
        for violation in result.violations:
            print(f"     {violation.invariant}: {violation.detail}", flush=True)

    results = run_plans(
        plans,
        lanes=args.lanes,
        rows=args.rows,
        directory=args.directory,
        keep=args.keep,
        progress=progress,
    )
    if results is None:
        print(
            "initdb/pg_ctl NOT FOUND: the fault suite needs a PostgreSQL cluster of its own",
            file=sys.stderr,
        )
        return 2
    wall = time.monotonic() - started
    print()
    print(report(results, wall))
    if args.json:
        args.json.write_text(as_json(results, wall))
    return 1 if any(r.violations for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
