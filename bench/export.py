"""Export speed: a saved query end to end through a job, against each source's native paths.

Every method runs in a child process of its own on the same data in the same run, and reports
its wall time and peak memory (RSS), so ratios compare like with like. The methods of each
source run interleaved (job, COPY, job with safety, Arrow, job, COPY, ...) for `--repetitions`
rounds, and each ratio is the median of the per-round ratios, printed with its spread:

- reportexport: create -> claim -> CSV object (local store) -> `succeeded`, measured from the
  job's creation to its `succeeded` commit; spreadsheet safety off (and once on, for its cost);
- DuckDB: `COPY (q) TO 'file'`, the job's own `COPY` (its projection of q, options and
  connection settings) into a file, its Arrow reader into `pyarrow.csv`, `fetchmany` +
  `csv.writer`, pandas `to_csv`;
- PostgreSQL (the same rows loaded from DuckDB): psycopg's `COPY ... TO STDOUT` into a file,
  the job's own `COPY ... TO STDOUT` into a file, `psql \\copy`, a named cursor + `csv.writer`.

The job over its own projection's `COPY` is what the job adds (FIFO, hash, counts, object
store, the job's life cycle); the projection's `COPY` over the bare one is the dialect's cost.

Then the worker's peak memory at 1 M and at the full row count, and cancel-to-stop latency
(p50/p99 over 20 cancels of a running export).

    ./scripts/bench export [--rows 10000000] [--repetitions 3] [--postgres URL] [--skip-slow]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratios import Ratio, interleave, ratio, verdict

QUERY = "SELECT * FROM orders"
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


# -- methods, each run in a child process --------------------------------------------------


def method_reportexport(args: argparse.Namespace) -> dict[str, Any]:
    from frozen_lifecycle.graph import load_graph
    from reportexport.core.catalog import parse_catalog
    from reportexport.core.fixture import default_fixture_path
    from reportexport.objects import open_object_store
    from reportexport.pipeline.export import new_export
    from reportexport.runners.worker import Worker, WorkerSettings
    from reportexport.store import open_database

    work = Path(args.work)
    catalog = parse_catalog(
        {
            "version": 1,
            "sources": {"src": {"url": args.source_url, "statement_timeout_seconds": 3600}},
            "queries": {
                "q": {"source": "src", "sql": QUERY, "csv": {"spreadsheet_safe": args.safe}}
            },
        },
        work / "catalog.toml",
    )
    database = open_database(
        f"sqlite:///{work / f'jobs-{uuid.uuid4().hex}.db'}",
        load_graph(default_fixture_path()),
        check=False,
    )
    database.schema.upgrade()
    objects = open_object_store(f"file://{work / 'objects'}", link_secret=b"bench")
    worker = Worker(database, catalog, objects, WorkerSettings(concurrency=1, poll_seconds=0.01))
    worker.start()
    started = time.monotonic()
    job, _ = database.jobs.create_job(new_export(catalog.queries["q"], {}, owner="bench"))
    while (current := database.jobs.get_job(job.id).job).finished_at is None:
        time.sleep(0.005)
    seconds = time.monotonic() - started
    worker.stop(grace_seconds=0)
    if current.status != "succeeded":
        raise SystemExit(f"the export ended {current.status}: {current.error_message}")
    objects.delete(current.object_key or "")
    return {"seconds": seconds, "bytes": current.object_bytes, "rows": current.object_rows}


def method_duckdb_copy(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(args.duckdb, read_only=True)
    started = time.monotonic()
    con.execute(f"COPY ({QUERY}) TO '{args.out}' (HEADER)")
    return {"seconds": time.monotonic() - started}


def method_duckdb_projection(args: argparse.Namespace) -> dict[str, Any]:
    """The job's own COPY (its connection settings, projection and options) into a file."""
    from reportexport.core.catalog import SourceConfig
    from reportexport.core.csvformat import CsvOptions
    from reportexport.sources.duckdb import DuckdbSource

    source = DuckdbSource(SourceConfig(name="src", url=f"duckdb:///{args.duckdb}"))
    started = time.monotonic()
    source.copy_to_file(QUERY, {}, CsvOptions(spreadsheet_safe=args.safe), args.out)
    return {"seconds": time.monotonic() - started}


def method_duckdb_arrow(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb
    import pyarrow.csv as pacsv

    con = duckdb.connect(args.duckdb, read_only=True)
    started = time.monotonic()
    reader = con.sql(QUERY).to_arrow_reader()
    with pacsv.CSVWriter(args.out, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    return {"seconds": time.monotonic() - started}


def method_duckdb_fetchmany(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(args.duckdb, read_only=True)
    started = time.monotonic()
    cursor = con.execute(QUERY)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([d[0] for d in cursor.description])
        while batch := cursor.fetchmany(10_000):
            writer.writerows(batch)
    return {"seconds": time.monotonic() - started}


def method_duckdb_pandas(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(args.duckdb, read_only=True)
    started = time.monotonic()
    con.sql(QUERY).df().to_csv(args.out, index=False)
    return {"seconds": time.monotonic() - started}


def method_psycopg_copy(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    started = time.monotonic()
    with (
        psycopg.connect(args.postgres) as conn,
        conn.cursor() as cur,
        open(args.out, "wb") as out,
        cur.copy(f"COPY ({QUERY}) TO STDOUT (FORMAT csv, HEADER)") as copy,
    ):
        for chunk in copy:
            out.write(chunk)
    return {"seconds": time.monotonic() - started}


def method_psycopg_projection(args: argparse.Namespace) -> dict[str, Any]:
    """The job's own COPY TO STDOUT (its session settings, projection and options) into a file."""
    from reportexport.core.catalog import SourceConfig
    from reportexport.core.csvformat import CsvOptions
    from reportexport.sources.postgres import PostgresSource

    source = PostgresSource(SourceConfig(name="src", url=args.postgres))
    started = time.monotonic()
    source.copy_to_file(QUERY, {}, CsvOptions(spreadsheet_safe=args.safe), args.out)
    return {"seconds": time.monotonic() - started}


def method_psql_copy(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    subprocess.run(
        ["psql", args.postgres, "-X", "-q", "-c", f"\\copy ({QUERY}) TO '{args.out}' CSV HEADER"],
        check=True,
    )
    return {"seconds": time.monotonic() - started}


def method_named_cursor(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    started = time.monotonic()
    with psycopg.connect(args.postgres) as conn, conn.cursor(name="bench") as cur:
        cur.itersize = 10_000
        cur.execute(QUERY)
        with open(args.out, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            first = True
            for row in cur:
                if first:
                    writer.writerow([d.name for d in cur.description or ()])
                    first = False
                writer.writerow(row)
    return {"seconds": time.monotonic() - started}


METHODS = {
    name[len("method_") :]: fn for name, fn in globals().items() if name.startswith("method_")
}


def child_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--method")
    for option in ("--duckdb", "--postgres", "--out", "--work", "--source-url"):
        p.add_argument(option)
    p.add_argument("--safe", action="store_true")
    args = p.parse_args(argv)
    result = METHODS[args.method](args)
    if args.out and os.path.exists(args.out):
        result.setdefault("bytes", os.path.getsize(args.out))
        os.unlink(args.out)
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), which starts afresh at exec.

    getrusage's ru_maxrss would carry the parent's peak over into the child.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def run_child(method: str, work: Path, **options: Any) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", "--method", method, "--work", str(work),
            "--out", str(work / f"{method}.csv")]  # fmt: skip
    for key, value in options.items():
        if value is True:
            argv.append(f"--{key.replace('_', '-')}")
        elif value not in (None, False):
            argv += [f"--{key.replace('_', '-')}", str(value)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{method} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the run -------------------------------------------------------------------------------------


def load_postgres(admin_url: str, duckdb_path: Path, work: Path) -> tuple[str, str]:
    import duckdb
    import psycopg

    name = f"reportexport_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = admin_url.rsplit("/", 1)[0] + "/" + name
    staging = work / "orders.csv"
    con = duckdb.connect(str(duckdb_path), read_only=True)
    con.execute(f"COPY orders TO '{staging}' (HEADER)")
    con.close()
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TABLE orders (order_id bigint, customer_id bigint, product_id bigint, "
            "order_date date, ordered_at timestamptz, quantity integer, amount numeric(12,2), "
            "paid boolean, score double precision, note text)"
        )
        with (
            conn.cursor() as cur,
            open(staging, "rb") as source,
            cur.copy("COPY orders FROM STDIN (FORMAT csv, HEADER)") as copy,
        ):
            while chunk := source.read(1 << 20):
                copy.write(chunk)
        conn.execute("ANALYZE orders")
    staging.unlink()
    return name, url


def cancel_latency(duckdb_path: Path, work: Path, rounds: int = 20) -> list[float]:
    from frozen_lifecycle.graph import load_graph
    from reportexport.core.catalog import parse_catalog
    from reportexport.core.fixture import default_fixture_path
    from reportexport.objects import open_object_store
    from reportexport.pipeline.export import new_export
    from reportexport.runners.worker import Worker, WorkerSettings
    from reportexport.store import open_database

    catalog = parse_catalog(
        {
            "version": 1,
            "sources": {"demo": {"url": f"duckdb:///{duckdb_path}"}},
            # Long enough that every cancel meets a running export.
            "queries": {"q": {"source": "demo", "sql": f"{QUERY}, range(1000)"}},
        },
        work / "catalog.toml",
    )
    graph = load_graph(default_fixture_path())
    database = open_database(f"sqlite:///{work / 'cancel.db'}", graph, check=False)
    database.schema.upgrade()
    objects = open_object_store(f"file://{work / 'cancel-objects'}", link_secret=b"bench")
    worker = Worker(database, catalog, objects, WorkerSettings(concurrency=1, poll_seconds=0.01))
    worker.start()
    latencies = []
    for _ in range(rounds):
        job, _ = database.jobs.create_job(new_export(catalog.queries["q"], {}, owner="bench"))
        while database.jobs.get_job(job.id).job.bytes_written == 0:
            time.sleep(0.005)
        database.jobs.cancel_job(job.id, person="bench")
        canceled = time.monotonic()
        while worker.active:
            time.sleep(0.001)
        latencies.append(time.monotonic() - canceled)
        if list(objects.list_objects()):
            raise SystemExit("a canceled export left an object behind")
    worker.stop(grace_seconds=0)
    database.close()
    return latencies


def main() -> None:
    if "--child" in sys.argv:
        child_main([a for a in sys.argv[1:] if a != "--child"])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument(
        "--postgres", default=os.environ.get("REPORTEXPORT_BENCH_POSTGRES", DEFAULT_POSTGRES)
    )
    p.add_argument("--repetitions", type=int, default=3, help="of each interleaved comparison")
    p.add_argument("--skip-slow", action="store_true", help="skip fetchmany, pandas, named cursor")
    args = p.parse_args()

    from reportexport.entrypoints.demo import build_demo_database

    work = Path(tempfile.mkdtemp(prefix="reportexport-bench-export-"))
    runs: dict[str, list[dict[str, Any]]] = {}
    pg_name = None

    def method(label: str, name: str, **options: Any) -> Callable[[], float]:
        def run() -> float:
            result = run_child(name, work, **options)
            runs.setdefault(label, []).append(result)
            return float(result["seconds"])

        return run

    def shown(label: str, repetition: int, seconds: float) -> None:
        rss = runs[label][-1]["peak_rss_mb"]
        print(f"  [{repetition + 1}] {label:44} {seconds:7.2f} s  {rss:7.0f} MB", flush=True)

    try:
        demo = work / "demo.duckdb"
        print(f"building {args.rows:,} demo orders ...", flush=True)
        build_demo_database(demo, args.rows)
        duck = f"duckdb:///{demo}"

        print(f"DuckDB source, interleaved, {args.repetitions} repetitions")
        interleave(
            {
                JOB_DUCKDB: method(JOB_DUCKDB, "reportexport", source_url=duck),
                "DuckDB COPY TO file": method("DuckDB COPY TO file", "duckdb_copy", duckdb=demo),
                PROJECTION_DUCKDB: method(PROJECTION_DUCKDB, "duckdb_projection", duckdb=demo),
                SAFE_DUCKDB: method(SAFE_DUCKDB, "reportexport", source_url=duck, safe=True),
                ARROW: method(ARROW, "duckdb_arrow", duckdb=demo),
            },
            args.repetitions,
            progress=shown,
        )
        if not args.skip_slow:
            once = {
                "DuckDB fetchmany + csv.writer": ("duckdb_fetchmany", {"duckdb": demo}),
                "DuckDB .df() + pandas to_csv": ("duckdb_pandas", {"duckdb": demo}),
            }
            for label, (name, options) in once.items():
                shown(label, 0, method(label, name, **options)())

        print("PostgreSQL source (loading the same rows ...)", flush=True)
        pg_name, pg_url = load_postgres(args.postgres, demo, work)
        interleave(
            {
                JOB_POSTGRES: method(JOB_POSTGRES, "reportexport", source_url=pg_url),
                PSYCOPG_COPY: method(PSYCOPG_COPY, "psycopg_copy", postgres=pg_url),
                PROJECTION_POSTGRES: method(
                    PROJECTION_POSTGRES, "psycopg_projection", postgres=pg_url
                ),
                SAFE_POSTGRES: method(SAFE_POSTGRES, "reportexport", source_url=pg_url, safe=True),
                "psql \\copy": method("psql \\copy", "psql_copy", postgres=pg_url),
            },
            args.repetitions,
            progress=shown,
        )
        if not args.skip_slow:
            label = "named cursor + csv.writer"
            shown(label, 0, method(label, "named_cursor", postgres=pg_url)())

        print("worker memory at 1 M rows", flush=True)
        small = work / "small.duckdb"
        build_demo_database(small, min(1_000_000, args.rows))
        label = "reportexport job, 1 M rows"
        shown(label, 0, method(label, "reportexport", source_url=f"duckdb:///{small}")())

        print("cancel-to-stop latency, 20 cancels of a running export", flush=True)
        latencies = sorted(cancel_latency(demo, work))
    finally:
        if pg_name is not None:
            import psycopg

            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {pg_name} WITH (FORCE)".encode())
        shutil.rmtree(work, ignore_errors=True)
    report(runs, latencies, args.rows)


JOB_DUCKDB = "reportexport job (DuckDB)"
SAFE_DUCKDB = "reportexport job, spreadsheet safety on"
ARROW = "DuckDB Arrow reader + pyarrow.csv"
JOB_POSTGRES = "reportexport job (PostgreSQL)"
SAFE_POSTGRES = "reportexport job (PostgreSQL), safety on"
PSYCOPG_COPY = "psycopg COPY TO STDOUT into a file"
# The job's own COPY (projection, options, session settings) into a file, nothing reading it.
PROJECTION_DUCKDB = "the job's projection, DuckDB COPY TO file"
PROJECTION_POSTGRES = "the job's projection, psycopg COPY into a file"


def report(runs: dict[str, list[dict[str, Any]]], latencies: list[float], rows: int) -> None:
    seconds = {label: [float(r["seconds"]) for r in found] for label, found in runs.items()}
    print()
    print(f"| method ({rows:,} rows) | runs | seconds (median) | rows/s | MB/s | peak RSS MB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, found in runs.items():
        median = statistics.median(seconds[label])
        size = found[0].get("bytes") or 0
        n = 1_000_000 if "1 M" in label else rows
        rss = max(r["peak_rss_mb"] for r in found)
        print(f"| {label} | {len(found)} | {median:.2f} | {n / median / 1e6:.2f} M | "
              f"{size / median / 1e6:.0f} | {rss:.0f} |")  # fmt: skip
    print()

    def per_run(a: str, b: str) -> Ratio | None:
        if a in seconds and b in seconds and len(seconds[a]) == len(seconds[b]):
            return ratio(seconds[a], seconds[b])
        return None

    def once(a: str, b: str) -> float:
        if a in seconds and b in seconds:
            return statistics.median(seconds[a]) / statistics.median(seconds[b])
        return float("nan")

    fastest_duck = [
        min(pair) for pair in zip(seconds["DuckDB COPY TO file"], seconds[ARROW], strict=True)
    ]
    interleaved = [
        ("DuckDB: job / DuckDB COPY TO file (target <= 1.2)",
         per_run(JOB_DUCKDB, "DuckDB COPY TO file"), "<=", 1.2),
        ("DuckDB: job / fastest native path, per repetition",
         ratio(seconds[JOB_DUCKDB], fastest_duck), None, None),
        ("PostgreSQL: job / psycopg COPY TO STDOUT (target <= 1.2)",
         per_run(JOB_POSTGRES, PSYCOPG_COPY), "<=", 1.2),
        ("DuckDB: job / its projection's COPY (target <= 1.1)",
         per_run(JOB_DUCKDB, PROJECTION_DUCKDB), "<=", 1.1),
        ("DuckDB: projection's COPY / bare COPY (target <= 1.2)",
         per_run(PROJECTION_DUCKDB, "DuckDB COPY TO file"), "<=", 1.2),
        ("PostgreSQL: job / its projection's COPY (target <= 1.1)",
         per_run(JOB_POSTGRES, PROJECTION_POSTGRES), "<=", 1.1),
        ("PostgreSQL: projection's COPY / bare COPY (target <= 1.2)",
         per_run(PROJECTION_POSTGRES, PSYCOPG_COPY), "<=", 1.2),
        ("spreadsheet safety cost, DuckDB (target <= 1.3)",
         per_run(SAFE_DUCKDB, JOB_DUCKDB), "<=", 1.3),
        ("spreadsheet safety cost, PostgreSQL (target <= 1.3)",
         per_run(SAFE_POSTGRES, JOB_POSTGRES), "<=", 1.3),
    ]  # fmt: skip
    print("interleaved ratios: median (lowest-highest, repetitions), judged on the median")
    for text, found, op, target in interleaved:
        if found is not None:
            print(f"{text:62} {found!s:>24}{verdict(found.median, op, target)}")
    singles = [
        ("DuckDB: fetchmany + csv.writer / job (target >= 8)",
         once("DuckDB fetchmany + csv.writer", JOB_DUCKDB), ">=", 8),
        ("DuckDB: pandas / job", once("DuckDB .df() + pandas to_csv", JOB_DUCKDB), None, None),
        ("PostgreSQL: named cursor + csv.writer / job (target >= 5)",
         once("named cursor + csv.writer", JOB_POSTGRES), ">=", 5),
        ("worker peak RSS MB at full size (target < 512)",
         max(r["peak_rss_mb"] for r in runs[JOB_DUCKDB]), "<", 512),
        ("cancel-to-stop p50 seconds", statistics.median(latencies), None, None),
        ("cancel-to-stop p99 seconds (target: within 1 s of noticing)",
         latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], None, None),
    ]  # fmt: skip
    for text, value, op, target in singles:
        print(f"{text:62} {value:24.2f}{verdict(value, op, target)}")


if __name__ == "__main__":
    main()
