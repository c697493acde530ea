"""The command line over the HTTP API: submit, follow with a progress bar, download.

Parameters are typed on the way: the saved query's own description (from the API) turns each
`NAME=VALUE` into the JSON value the API takes, with the same rules the service applies.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import httpx
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from reportexport.core.parameters import ParameterError, ParamSpec, coerce, encode, json_number
from reportexport.core.settings import Settings
from reportexport.core.text import printable, quoted

DEFAULT_SERVER = "http://127.0.0.1:8000"


class ApiError(Exception):
    """The server refused or failed; `status` is its HTTP status, if it answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def connect(settings: Settings) -> httpx.Client:
    if not settings.token:
        raise ApiError(
            "no token: pass --token or set $REPORTEXPORT_TOKEN (`serve` prints one when it "
            "first starts; `reportexport users token NAME` makes a new one)",
            400,
        )
    if not (settings.token.isascii() and settings.token.isprintable()) or " " in settings.token:
        raise ApiError(
            f"token {quoted(settings.token, 12)}: a token is printable ASCII without spaces", 400
        )
    server = settings.server or DEFAULT_SERVER
    try:
        url = httpx.URL(server)
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise ApiError(f"server {quoted(server)}: not a URL ({exc})", 400) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ApiError(f"server {quoted(server)}: give an http:// or https:// URL", 400)
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {settings.token}"}, timeout=30
    )


def checked(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            problem = response.json()
            message = f"{problem.get('title')}: {problem.get('detail')}"
        except ValueError:
            message = response.text[:200]
        raise ApiError(f"HTTP {response.status_code} {message}", response.status_code)
    return response.json() if response.content else None


def typed_parameters(described: list[Mapping[str, Any]], raw: Mapping[str, str]) -> dict[str, Any]:
    """Text values as the JSON the API takes, by the saved query's parameter types."""
    specs = {d["name"]: d for d in described}
    typed: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in specs or value == "":
            typed[name] = value  # the service names the problem
            continue
        spec = ParamSpec(name=name, type=specs[name]["type"])
        converted = encode(coerce(spec, value, from_text=True))
        typed[name] = json_number(converted) if spec.type == "number" else converted
    return typed


def output_problem(output: Path) -> str | None:
    """Why a file cannot be written at `output`, checked before anything is asked of a server
    or a worker; None when it can."""
    folder = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        return f"{output} is a directory; name a file"
    if not folder.is_dir():
        return f"{output}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        return f"{output}: not writable"
    return None


def cmd_remote_export(settings: Settings, args: argparse.Namespace, raw: dict[str, str]) -> int:
    console = Console(stderr=True)
    with connect(settings) as client:
        query = client.get(f"/api/saved-queries/{quote(args.query, safe='')}")
        if query.status_code == 404:
            raise ApiError(f"no saved query {quoted(args.query)}; see: reportexport queries list")
        described = checked(query)
        if not isinstance(described, dict) or not isinstance(described.get("parameters"), list):
            raise ApiError(f"the server described {quoted(args.query)} in a way this is not for")
        parameters = typed_parameters(described["parameters"], raw)
        job = checked(
            client.post(
                "/api/exports",
                json={"saved_query": args.query, "parameters": parameters, "notify": args.notify},
            )
        )
        console.print(f"job {job['id']}: {job['status']}")
        if not (args.wait or args.output):
            return 0
        job = follow(client, job["id"], console)
        if job["status"] != "succeeded":
            failure = f"{job.get('error_code') or ''} {job.get('error_message') or ''}"
            console.print(f"job {job['id']}: {job['status']} {failure}")
            return 1
        console.print(f"job {job['id']}: succeeded, {job['rows']:,} rows, {job['bytes']:,} bytes")
        if args.output:
            download(client, job["id"], args.output)
            console.print(f"written to {args.output}")
    return 0


def follow(client: httpx.Client, job_id: int, console: Console) -> dict[str, Any]:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(f"job {job_id}", total=None, detail="queued")
        while True:
            job: dict[str, Any] = checked(client.get(f"/api/exports/{job_id}"))["job"]
            detail = f"{job['status']}: {job['rows_written']:,} rows, {job['bytes_written']:,} B"
            progress.update(task, detail=detail)
            if job["finished_at"] is not None:
                return job
            time.sleep(0.5)


def download(client: httpx.Client, job_id: int, output: Path) -> None:
    link = client.get(f"/api/exports/{job_id}/download", follow_redirects=False)
    if link.status_code != 302:
        checked(link)
        raise ApiError("the server gave no download link")
    # The link is signed: it needs no token, and the token must not travel to where it points
    # (an S3 presigned URL refuses a request that carries one).
    request = client.build_request("GET", urljoin(str(client.base_url), link.headers["location"]))
    request.headers.pop("authorization", None)
    partial = output.with_name(output.name + ".download")
    response = client.send(request, stream=True)
    try:
        if response.status_code >= 400:
            response.read()
            checked(response)
        with open(partial, "wb") as target:
            for chunk in response.iter_bytes():
                target.write(chunk)
    finally:
        response.close()
    partial.replace(output)  # a half-written file never takes the name


def cmd_jobs(settings: Settings, args: argparse.Namespace) -> int:
    with connect(settings) as client:
        if args.action == "list":
            params = {"status": args.status} if args.status else {}
            page = checked(client.get("/api/exports", params=params))
            table = Table("id", "saved query", "status", "owner", "created", "rows", "bytes")
            for job in page["jobs"]:
                table.add_row(
                    str(job["id"]),
                    job["saved_query"],
                    job["status"],
                    job["owner"],
                    job["created_at"],
                    f"{job['rows_written']:,}",
                    f"{job['bytes_written']:,}",
                )
            Console().print(table)
        elif args.action == "show":
            show(checked(client.get(f"/api/exports/{args.id}")))
        elif args.action == "download":
            problem = output_problem(args.output)
            if problem is not None:
                print(f"reportexport jobs download: -o {problem}", file=sys.stderr)
                return 2
            download(client, args.id, args.output)
            print(f"job {args.id}: written to {args.output}")
        elif args.action == "notify":
            job = checked(client.post(f"/api/exports/{args.id}/notify"))
            print(f"job {job['id']}: an e-mail goes to its owner when it ends")
        else:  # cancel
            job = checked(client.post(f"/api/exports/{args.id}/cancel"))
            print(f"job {job['id']}: {job['status']}")
    return 0


def show(detail: Mapping[str, Any]) -> None:
    job = detail["job"]
    console = Console()
    console.print(f"job {job['id']} {job['saved_query']} {job['status']} ({job['owner']})")
    if job.get("requested_by"):
        console.print(f"  asked for by {job['requested_by']}")
    if job.get("rerun_of"):
        console.print(f"  runs job {job['rerun_of']} again")
    firing = detail.get("firing")
    if firing:
        skipped = f", {firing['missed']} earlier times skipped" if firing["missed"] else ""
        console.print(f"  made by schedule {firing['schedule_id']} for "
                      f"{firing['scheduled_for']}{skipped}")  # fmt: skip
    for entry in detail["history"]:
        who = entry["person"] or entry["worker"] or ""
        move = f"{entry['from_status']} -> {entry['to_status']}"
        console.print(f"  {entry['at']}  {move}  {entry['actor']} {who}  {entry['reason'] or ''}")
    for effect in detail["side_effects"]:
        completed = ", completed" if effect["completed_at"] else ""
        console.print(f"  effect {effect['effect']}: {effect['attempts']} attempts{completed}")


def cmd_schedules(settings: Settings, args: argparse.Namespace) -> int:
    with connect(settings) as client:
        if args.action == "list":
            table = Table("id", "saved query", "when", "next (local time)", "owner", "paused")
            for schedule in checked(client.get("/api/schedules")):
                upcoming = schedule["next_times"][0]["local"] if schedule["next_times"] else "-"
                table.add_row(
                    str(schedule["id"]), schedule["saved_query"], schedule["description"],
                    upcoming, schedule["owner"], schedule["pause_reason"] or "",
                )  # fmt: skip
            Console().print(table)
        elif args.action == "create":
            body = schedule_body(client, args)
            show_schedule(checked(client.post("/api/schedules", json=body)))
        elif args.action == "show":
            show_schedule(checked(client.get(f"/api/schedules/{args.id}")))
        elif args.action == "preview":
            asked = {"cron": args.cron, "time_zone": args.time_zone}
            shown = checked(client.get("/api/schedule-preview", params=asked))
            console = Console()
            console.print(f"{shown['description']}. {shown['period']}", soft_wrap=True)
            for upcoming in shown["next_times"]:
                console.print(f"  next: {upcoming['local']}")
        elif args.action in ("pause", "resume"):
            show_schedule(checked(client.post(f"/api/schedules/{args.id}/{args.action}")))
        elif args.action == "run":
            job = checked(client.post(f"/api/schedules/{args.id}/run"))
            print(f"job {job['id']}: {job['status']}")
        elif args.action == "recipients":
            show_recipients(client, args.id, added=args.add, removed=args.remove)
        elif args.action == "channels":
            show_channels(client, args.id, added=args.add, removed=args.remove)
        elif args.action == "addresses":
            show_addresses(client, args.id, args)
        else:  # delete
            checked(client.delete(f"/api/schedules/{args.id}"))
            print(f"schedule {args.id}: deleted (its exports stay)")
    return 0


def show_recipients(
    client: httpx.Client, schedule_id: int, *, added: list[str], removed: list[str]
) -> None:
    """Add, then remove, recipients as given, saying what each did; then list them all (a
    recipient who removed themselves from another's schedule sees no list: it is not theirs)."""
    path = f"/api/schedules/{schedule_id}/recipients"
    console = Console()
    for person in added:
        answer = client.put(f"{path}/{quote(person, safe='')}")
        checked(answer)
        done = "added" if answer.status_code == 201 else "a recipient already"
        console.print(f"schedule {schedule_id}: {person} {done}")
    for person in removed:
        checked(client.delete(f"{path}/{quote(person, safe='')}"))
        console.print(f"schedule {schedule_id}: {person} removed")
    listed = client.get(path)
    if listed.status_code == 404 and removed:
        return
    everyone = checked(listed)
    if not everyone:
        console.print(f"schedule {schedule_id}: no recipients besides its owner")
    for recipient in everyone:
        console.print(f"  {recipient['person']}  added by {recipient['added_by']} "
                      f"at {recipient['added_at']}")  # fmt: skip


def show_channels(
    client: httpx.Client, schedule_id: int, *, added: list[int], removed: list[int]
) -> None:
    """Add, then remove, a schedule's chat channels as given, saying what each did; then list
    them all."""
    path = f"/api/schedules/{schedule_id}/channels"
    console = Console()
    for channel in added:
        answer = client.put(f"{path}/{channel}")
        checked(answer)
        done = "added" if answer.status_code == 201 else "one of its channels already"
        console.print(f"schedule {schedule_id}: chat channel {channel} {done}")
    for channel in removed:
        checked(client.delete(f"{path}/{channel}"))
        console.print(f"schedule {schedule_id}: chat channel {channel} removed")
    listed = checked(client.get(path))
    if not listed:
        console.print(f"schedule {schedule_id}: no chat channels besides its owner's and the "
                      "global ones")  # fmt: skip
    for channel in listed:
        removed_at = f", removed {channel['removed_at']}" if channel["removed_at"] else ""
        console.print(f"  {channel['channel_id']} {channel['name']} on {channel['host']}  added "
                      f"by {channel['added_by']} at {channel['added_at']}{removed_at}",
                      markup=False)  # fmt: skip


def show_addresses(client: httpx.Client, schedule_id: int, args: argparse.Namespace) -> None:
    """Add, then remove, a schedule's outside addresses as given, saying what each did; then
    list them all."""
    path = f"/api/schedules/{schedule_id}/addresses"
    if args.gzip and args.attach_max_bytes is None:
        raise ApiError("--gzip compresses what is attached: give --attach-max-bytes too", 400)
    if args.attach_max_bytes is not None and not args.add:
        raise ApiError("--attach-max-bytes says what an address added gets: give --add", 400)
    attach: dict[str, Any] = {}
    if args.attach_max_bytes is not None:
        attach = {"attach_max_bytes": args.attach_max_bytes, "attach_gzip": args.gzip}
    console = Console()
    for address in args.add:
        answer = client.put(f"{path}/{quote(address, safe='@')}", params=attach)
        checked(answer)
        done = "added" if answer.status_code == 201 else "one of its addresses already, set again"
        console.print(f"schedule {schedule_id}: {answer.json()['address']} {done}", markup=False)
    for address in args.remove:
        checked(client.delete(f"{path}/{quote(address, safe='@')}"))
        console.print(f"schedule {schedule_id}: {address.lower()} removed", markup=False)
    listed = checked(client.get(path))
    if not listed:
        console.print(f"schedule {schedule_id}: no outside addresses")
    for added in listed:
        limit = added["attach_max_bytes"]
        gets = "a download link"
        if limit is not None:
            squeezed = " after gzip" if added["attach_gzip"] else ""
            gets = f"the file attached up to {limit:,} bytes{squeezed}"
        console.print(f"  {added['address']}  {gets}; added by {added['added_by']} at "
                      f"{added['added_at']}", markup=False)  # fmt: skip


def schedule_body(client: httpx.Client, args: argparse.Namespace) -> dict[str, Any]:
    query = client.get(f"/api/saved-queries/{quote(args.query, safe='')}")
    if query.status_code == 404:
        raise ApiError(f"no saved query {quoted(args.query)}; see: reportexport queries list")
    described = checked(query)
    parameters: dict[str, Any] = typed_parameters(described["parameters"], args.raw_parameters)
    for name, word in args.relative_parameters.items():
        parameters[name] = {"relative": word}
    body: dict[str, Any] = {
        "saved_query": args.query,
        "parameters": parameters,
        "cron": args.cron,
        "time_zone": args.time_zone,
    }
    if args.ends_at:
        body["ends_at"] = args.ends_at
    return body


def show_schedule(schedule: Mapping[str, Any]) -> None:
    console = Console()
    console.print(f"schedule {schedule['id']} {schedule['saved_query']} ({schedule['owner']}): "
                  f"{schedule['description']}")  # fmt: skip
    if schedule["pause_reason"]:
        console.print(f"  paused at {schedule['paused_at']}: {schedule['pause_reason']}")
    for upcoming in schedule["next_times"]:
        console.print(f"  next: {upcoming['local']}")
    for firing in schedule["firings"]:
        made = f"job {firing['job_id']}" if firing["job_id"] else f"no job: {firing['refusal']}"
        skipped = f" ({firing['missed']} earlier times skipped)" if firing["missed"] else ""
        console.print(f"  fired for {firing['scheduled_for']}: {made}{skipped}")


def cmd_remote_queries(settings: Settings) -> int:
    with connect(settings) as client:
        for query in checked(client.get("/api/saved-queries")):
            params = ", ".join(
                f"{p['name']}:{p['type']}{'' if p['required'] else '?'}"
                for p in query["parameters"]
            )
            print(f"{query['name']:24} {query['title']}  ({params or 'no parameters'})")
    return 0


def run(handler: Callable[..., int], *args: Any) -> int:
    """Exit 2 when the input was refused (here or by the server), 1 when something failed."""
    try:
        return int(handler(*args))
    except ParameterError as exc:
        print(f"reportexport: {printable(str(exc))}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"reportexport: {exc}", file=sys.stderr)
        return 2 if exc.status in (400, 415, 422) else 1
    except httpx.ConnectError as exc:
        server = (getattr(args[0], "server", "") if args else "") or DEFAULT_SERVER  # settings
        print(
            f"reportexport: no server answers at {printable(server)} ({printable(str(exc))}): "
            "start one (`./scripts/run` or `reportexport serve`), or name yours with --server "
            "or $REPORTEXPORT_SERVER",
            file=sys.stderr,
        )
        return 1
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        print(f"reportexport: {printable(str(exc))}", file=sys.stderr)
        return 1
