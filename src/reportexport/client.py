"""The command line over the HTTP API: submit, follow with a progress bar, download."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

SERVER_ENV, TOKEN_ENV = "REPORTEXPORT_SERVER", "REPORTEXPORT_TOKEN"


class ApiError(Exception):
    pass


def connect(args: argparse.Namespace) -> httpx.Client:
    server = args.server or os.environ.get(SERVER_ENV) or "http://127.0.0.1:8000"
    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise ApiError(f"no token: pass --token or set ${TOKEN_ENV}")
    return httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def checked(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            problem = response.json()
            message = f"{problem.get('title')}: {problem.get('detail')}"
        except ValueError:
            message = response.text[:200]
        raise ApiError(f"HTTP {response.status_code} {message}")
    return response.json() if response.content else None


def cmd_remote_export(args: argparse.Namespace, raw: dict[str, str]) -> int:
    console = Console(stderr=True)
    with connect(args) as client:
        job = checked(
            client.post("/api/exports", json={"saved_query": args.query, "parameters": raw})
        )
        console.print(f"job {job['id']}: {job['status']}")
        if not (args.wait or args.output):
            return 0
        job = follow(client, job["id"], console)
        if job["status"] != "succeeded":
            console.print(f"job {job['id']}: {job['status']} {job.get('error_code') or ''} "
                          f"{job.get('error_message') or ''}")  # fmt: skip
            return 1
        console.print(f"job {job['id']}: succeeded, {job['rows']:,} rows, {job['bytes']:,} bytes")
        if args.output:
            download(client, job["id"], args.output)
            console.print(f"written to {args.output}")
    return 0


def follow(client: httpx.Client, job_id: int, console: Console) -> dict[str, Any]:
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(f"job {job_id}", total=None, detail="queued")
        while True:
            job: dict[str, Any] = checked(client.get(f"/api/exports/{job_id}"))["job"]
            progress.update(task, detail=f"{job['status']}: {job['bytes_written']:,} bytes")
            if job["finished_at"] is not None:
                return job
            time.sleep(0.5)


def download(client: httpx.Client, job_id: int, output: Path) -> None:
    link = client.get(f"/api/exports/{job_id}/download")
    if link.status_code != 302:
        checked(link)
        raise ApiError("the server gave no download link")
    location = link.headers["location"]
    with client.stream("GET", location) as response, open(output, "wb") as target:
        if response.status_code >= 400:
            response.read()
            checked(response)
        for chunk in response.iter_bytes():
            target.write(chunk)


def cmd_jobs(args: argparse.Namespace) -> int:
    with connect(args) as client:
        if args.action == "list":
            params = {"status": args.status} if args.status else {}
            page = checked(client.get("/api/exports", params=params))
            table = Table("id", "saved query", "status", "owner", "created", "bytes")
            for job in page["jobs"]:
                table.add_row(str(job["id"]), job["saved_query"], job["status"], job["owner"],
                              job["created_at"], f"{job['bytes_written']:,}")  # fmt: skip
            Console().print(table)
        elif args.action == "show":
            detail = checked(client.get(f"/api/exports/{args.id}"))
            job = detail["job"]
            console = Console()
            console.print(f"job {job['id']} {job['saved_query']} {job['status']} ({job['owner']})")
            for entry in detail["history"]:
                who = entry["person"] or entry["worker"] or ""
                console.print(f"  {entry['at']}  {entry['from_status']} -> {entry['to_status']}"
                              f"  {entry['actor']} {who}  {entry['reason'] or ''}")  # fmt: skip
            for effect in detail["side_effects"]:
                console.print(f"  effect {effect['effect']}: {effect['attempts']} attempts"
                              f"{', done' if effect['completed_at'] else ''}")  # fmt: skip
        else:  # cancel
            job = checked(client.post(f"/api/exports/{args.id}/cancel"))
            print(f"job {job['id']}: {job['status']}")
    return 0


def cmd_remote_queries(args: argparse.Namespace) -> int:
    with connect(args) as client:
        for query in checked(client.get("/api/saved-queries")):
            params = ", ".join(
                f"{p['name']}:{p['type']}{'' if p['required'] else '?'}"
                for p in query["parameters"]
            )
            print(f"{query['name']:24} {query['title']}  ({params or 'no parameters'})")
    return 0


def run(handler: Any, *args: Any) -> int:
    try:
        return int(handler(*args))
    except (ApiError, httpx.HTTPError) as exc:
        print(f"reportexport: {exc}", file=sys.stderr)
        return 1
