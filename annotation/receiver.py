"""The vote receiver: Label Studio's webhooks in, each vote settled off the request thread.

Label Studio sends a webhook synchronously, inside the annotator's request, with a 1 s timeout; so the
receiver answers at once and leaves the work to a few worker threads: decide the task, raise or close
its overlap, promote an item screening accepted (settle.py). An event only names the task to
settle: what is acted on is read back from Label Studio with the pipeline's token. It refuses a request
without the shared secret (403), answers a bad payload with 400 and a log line, ignores events of other
projects and repeated events, and loses nothing it cannot repair: whatever it misses (it was down, Label
Studio was restarted, a settle failed) the periodic sync (`collect.py`) reconciles.

    knowref60k labelstudio receiver start [--items output/run/items] [--config FILE]    (make labelstudio)
    knowref60k labelstudio receiver stop|status [--demo]
    knowref60k labelstudio receiver serve CONFIG_JSON     (hidden: in the foreground; what `start` spawns)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import io
import logging
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, OrderedDict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.core.io import private_dir
from knowref60k.core.paths import HOME_VARIABLE, home
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import STAGES
from knowref60k.labelling.slots import QueueState

from .client import LabelStudioClient
from .doorman import HEAD_SECONDS, Doorman
from .server import RECEIVER, Background, settle_url
from .settings import (
    SECRET_HEADER,
    WEBHOOK_ACTIONS,
    Settings,
    load_settings,
    receiver_url,
    webhook_secret,
)
from .settle import Settler

log = logging.getLogger(__name__)
WORKERS = 16
ATTEMPTS = 3
# Events remembered to ignore a repeat: far more than are in flight at once.
REMEMBERED = 100_000
MAX_BODY = 4 * 2**20
# Connections served at once, how long one may stay silent and how long it may stay open at all: a
# connection must not keep a thread for ever (Label Studio's webhook gives up after a second or so).
MAX_CONNECTIONS = 128
IDLE_SECONDS = 10.0
CONNECTION_SECONDS = 60.0
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
# The settle times reported are those of the last this many events.
TIMED = 10_000
# Where an event's arrival time is kept in the queue (a key no webhook payload has).
RECEIVED = "_knowref60k_received"


class TaskQueue:
    """Webhook events waiting to be applied, grouped by task; a task's events are applied together by
    one worker at a time, in the order they came: an event arriving while its task is being settled waits
    for the next round, so the last vote is never missed."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._pending: OrderedDict[int, tuple[str, list[dict[str, Any]]]] = OrderedDict()
        self._busy: set[int] = set()

    def put(self, task_id: int, stage: str, event: dict[str, Any]) -> None:
        with self._condition:
            self._pending.setdefault(task_id, (stage, []))[1].append(event)
            self._condition.notify()

    def take(self) -> tuple[int, str, list[dict[str, Any]]]:
        with self._condition:
            while True:
                ready = next((task for task in self._pending if task not in self._busy), None)
                if ready is not None:
                    self._busy.add(ready)
                    stage, events = self._pending.pop(ready)
                    return ready, stage, events
                self._condition.wait()

    def done(self, task_id: int) -> None:
        with self._condition:
            self._busy.discard(task_id)
            self._condition.notify_all()

    def idle(self) -> bool:
        with self._condition:
            return not self._pending and not self._busy


class Receiver:
    """The webhook endpoint of one Label Studio server and the workers that settle its votes."""

    def __init__(self, settler: Settler, secret: str) -> None:
        self.settler = settler
        self.secret = secret.encode()
        self.queue = TaskQueue()
        self.counts: Counter[str] = Counter()
        self._seen: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        self.settle_seconds: list[float] = []
        self._lock = threading.RLock()

    def authorised(self, header: str | None) -> bool:
        return bool(self.secret) and header is not None and hmac.compare_digest(header.encode(), self.secret)

    def accept(self, payload: Any) -> str:
        """Queue the event's task; returns what was done with it. A payload of the wrong shape raises
        ValueError."""
        if not isinstance(payload, dict) or not isinstance(payload.get("action"), str):
            raise ValueError("not a webhook payload (no action)")
        action = payload["action"]
        if action not in WEBHOOK_ACTIONS:
            return self._count("ignored_action")
        project = payload.get("project")
        project = project.get("id") if isinstance(project, dict) else None
        if type(project) is not int:  # not a bool either: true is no project id
            raise ValueError(f"{action} without a project id")
        stage = self.settler.stage_of(project)
        if stage is None:
            return self._count("other_project")
        if action == "ANNOTATIONS_DELETED":  # the payload names no task: the next sync reopens it
            return self._count("deletions_left_to_sync")
        annotation, task = payload.get("annotation"), payload.get("task")
        if not isinstance(annotation, dict) or not isinstance(task, dict) or type(task.get("id")) is not int:
            raise ValueError(f"{action} without an annotation and its task")
        if type(annotation.get("id")) is not int:
            raise ValueError(f"{action}: an annotation without an id")
        if not isinstance(annotation.get("updated_at"), str | None):
            raise ValueError(f"{action}: an annotation whose updated_at is no time")
        with self._lock:
            key = (action, annotation.get("id"), annotation.get("updated_at"))
            if key in self._seen:
                return self._count("duplicates")
            self._seen[key] = None
            while len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)
        self.queue.put(task["id"], stage, {**payload, RECEIVED: time.monotonic()})
        return self._count("queued")

    def settle_again(self, task_id: int, stage: str) -> None:
        """Queue a task to be settled again (its votes changed in meaning: an annotator was paused)."""
        self.queue.put(task_id, stage, {"task": {}, RECEIVED: time.monotonic()})

    def _count(self, what: str) -> str:
        with self._lock:
            self.counts[what] += 1
        return what

    def work(self) -> None:
        """A worker: settle queued tasks for ever, each tried a few times before it is left to the sync."""
        while True:
            task_id, stage, events = self.queue.take()
            try:
                self._count(self._settle(task_id, stage, events))
                self._timed([time.monotonic() - event[RECEIVED] for event in events])
            finally:
                self.queue.done(task_id)

    def _settle(self, task_id: int, stage: str, events: list[dict[str, Any]]) -> str:
        claims = {claimed_state(event["task"]) for event in events}
        # Events that disagree (one of them forged?) spare no write.
        claimed = claims.pop() if len(claims) == 1 else None
        for attempt in range(ATTEMPTS):
            try:
                return self.settler.settle(task_id, stage, claimed)
            except (ServiceUnavailable, UserError) as error:
                log.warning(
                    "settling task %s failed (try %d of %d): %s", task_id, attempt + 1, ATTEMPTS, error
                )
                time.sleep(0.5 * 2**attempt)
            except Exception:  # a worker must outlive any one task; the sync repairs it
                log.exception("settling task %s failed", task_id)
                break
        return "left_to_sync"

    def start_workers(self, count: int = WORKERS) -> None:
        for number in range(count):
            threading.Thread(target=self.work, name=f"settle-{number}", daemon=True).start()

    def _timed(self, seconds: list[float]) -> None:
        with self._lock:
            self.settle_seconds.extend(seconds)
            del self.settle_seconds[:-TIMED]

    def report(self) -> dict[str, Any]:
        """The counts, whether it is idle, and the seconds from receiving an event to having settled its
        task (median and 99th percentile of the last events)."""
        with self._lock:
            timed = sorted(self.settle_seconds) or [0.0]
            quantiles = {f"p{q}": round(timed[int(q / 100 * (len(timed) - 1))], 3) for q in (50, 99)}
            return {
                **dict(sorted(self.counts.items())),
                "idle": self.queue.idle(),
                "settle_seconds": quantiles,
            }


class ReceiverServer(ThreadingHTTPServer):
    """Connections wait at the door (doorman.py) until their head is in; those let through get a thread
    each, at most `max_connections` of them, each open at most `deadline` seconds: one past the bound is
    answered 503 at once and one past its deadline is cut, both counted, so that neither a flood of silent
    connections nor a few that trickle a byte at a time hold the threads."""

    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog: a burst of votes is not refused by the kernel

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        receiver: Receiver,
        max_connections: int = MAX_CONNECTIONS,
        deadline: float = CONNECTION_SECONDS,
        head_seconds: float = HEAD_SECONDS,
    ) -> None:
        super().__init__(address, handler)
        self.receiver = receiver
        self.deadline = deadline
        self._slots = threading.BoundedSemaphore(max_connections)
        self._opened: dict[Any, float] = {}
        self._opened_lock = threading.Lock()
        self._closed = threading.Event()
        self.heads: dict[Any, bytes] = {}
        self.doorman = Doorman(
            SECRET_HEADER, receiver.secret, self._admit, receiver._count, head_seconds=head_seconds
        )
        threading.Thread(target=self._cut_late_connections, name="deadlines", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.doorman.add(request, client_address)

    def _admit(self, request: Any, client_address: Any, head: bytes) -> None:
        if not self._slots.acquire(blocking=False):
            self.receiver._count("connections_refused")
            with contextlib.suppress(OSError):
                request.sendall(BUSY)
            self.shutdown_request(request)
            return
        self.heads[request] = head
        try:
            threading.Thread(
                target=self.process_request_thread, args=(request, client_address), daemon=True
            ).start()
        except Exception:
            self.heads.pop(request, None)
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._opened_lock:
            self._opened[request] = time.monotonic()
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._opened_lock:
                self._opened.pop(request, None)  # gone already when it was cut
            self._slots.release()

    def _cut_late_connections(self) -> None:
        while not self._closed.wait(min(1.0, self.deadline / 4)):
            cutoff = time.monotonic() - self.deadline
            with self._opened_lock:
                late = [request for request, opened in self._opened.items() if opened < cutoff]
                for request in late:  # each cut once, however long its thread takes to end
                    del self._opened[request]
            for request in late:
                self.receiver._count("connections_cut")
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)

    def server_close(self) -> None:
        self._closed.set()
        self.doorman.close()
        super().server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before the answer (a cut connection, a sender that gave up) is no fault
        of the receiver: logged, not printed as a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            log.debug("%s hung up before the answer", client_address)
            return
        super().handle_error(request, client_address)


class Replayed(io.RawIOBase):
    """A connection's bytes as a file, starting with those already read from it."""

    def __init__(self, head: bytes, connection: socket.socket) -> None:
        self.head, self.connection = memoryview(head), connection

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            size = min(len(buffer), len(self.head))
            buffer[:size], self.head = self.head[:size], self.head[size:]
            return size
        return self.connection.recv_into(buffer)


def claimed_state(task: dict[str, Any]) -> QueueState | None:
    """The task's queue state as an event gives it (Label Studio's, when the event is genuine)."""
    overlap, labelled = task.get("overlap"), task.get("is_labeled")
    if type(overlap) is not int or type(labelled) is not bool:
        return None
    return QueueState(overlap, labelled)


def handler_for(receiver: Receiver, idle_seconds: float = IDLE_SECONDS) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = idle_seconds

        def setup(self) -> None:
            """Read the head the door already took in (doorman.py) before the rest of the connection."""
            super().setup()
            head = self.server.heads.pop(self.connection, b"")  # type: ignore[attr-defined]
            self.rfile = io.BufferedReader(Replayed(head, self.connection))

        def do_POST(self) -> None:
            # The door lets only a head with the secret through; checked again here, so that the handler
            # holds wherever it is served.
            if not receiver.authorised(self.headers.get(SECRET_HEADER)):
                receiver._count("refused")
                log.warning("refused a webhook from %s: wrong or missing secret", self.client_address[0])
                return self._answer(403, {"error": "wrong or missing secret"})
            declared = self.headers.get("Content-Length") or "0"
            length = int(declared) if declared.isdigit() else -1
            if not 0 < length <= MAX_BODY:
                self.close_connection = True  # the body's end is unknown: nothing more is read from it
                return self._bad(f"body of {declared[:20]!r} bytes")
            try:
                done = receiver.accept(orjson.loads(self.rfile.read(length)))
            except (orjson.JSONDecodeError, ValueError) as error:
                return self._bad(str(error))
            self._answer(200, {"result": done})

        def do_GET(self) -> None:
            if urlsplit(self.path).path.rstrip("/") != "/health":
                return self._answer(404, {"error": "not found"})
            self._answer(200, receiver.report())

        def _bad(self, why: str) -> None:
            receiver._count("bad_payloads")
            log.warning("bad webhook payload: %s", why)
            self._answer(400, {"error": why})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = orjson.dumps(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    return Handler


def make_server(settings: Settings, config: LabellingConfig, items: list[Path]) -> ReceiverServer:
    """The receiver for `settings`' server, listening where `receiver_url` says, its workers started."""
    api_url = settle_url(settings)
    log.info("settling through Label Studio at %s", api_url)
    client = LabelStudioClient(settings, api_url=api_url)
    settler = Settler(client, config, items)
    receiver = Receiver(settler, webhook_secret(settings))
    settler.requeue = receiver.settle_again
    review_webhooks(client)
    address = urlsplit(receiver_url(settings))
    server = ReceiverServer(
        (address.hostname or "127.0.0.1", address.port or 80), handler_for(receiver), receiver
    )
    receiver.start_workers()
    return server


def review_webhooks(client: LabelStudioClient) -> None:
    """Put the projects' webhooks back as the pipeline set them before listening (webhooks.py);
    a server that does not answer yet leaves it to the next sync."""
    try:
        found = [client.find_project(stage) for stage in STAGES]
        client.review_webhooks([int(project.id) for project in found if project is not None])
    except (ServiceUnavailable, UserError) as error:
        log.warning("webhooks not reviewed at start (the next sync does): %s", error)


@dataclass(frozen=True)
class ReceiverProcess(Background):
    """The receiver of `settings`' Label Studio as a process of its own, started with the labelling
    config it settles by (written beside its pid file) and the folders of the items it may promote."""

    name: str = RECEIVER
    title: str = "vote receiver"

    @property
    def config_file(self) -> Path:
        return self.state_dir / f"{self.name}-{self.settings.port}.json"

    def healthy(self) -> bool:
        return self.health() is not None

    def settled(self, received: int = 0) -> bool:
        """Whether it has received at least `received` votes and settled every vote it received. True when
        it is not running (nothing will be); False while it runs but does not answer (busy, under load)."""
        health = self.health()
        if health is None:
            return self.pid() is None
        return bool(health["idle"]) and int(health.get("queued", 0)) >= received

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(receiver_url(self.settings) + "health", timeout=3) as response:
                found: dict[str, Any] = orjson.loads(response.read())
                return found
        except (urllib.error.URLError, OSError, orjson.JSONDecodeError):
            return None

    def start(self, config: LabellingConfig, items: list[Path], timeout: float = 60) -> str:
        """Start it, or restart it when it runs with another config or other item folders."""
        with self.starting():
            return self._start(config, items, timeout)

    def _start(self, config: LabellingConfig, items: list[Path], timeout: float) -> str:
        folders = [str(path.resolve()) for path in items]
        wanted = orjson.dumps(
            {"config": dataclasses.asdict(config), "items": folders, "project": self.settings.project}
        )
        if self.healthy():
            if self.config_file.exists() and self.config_file.read_bytes() == wanted:
                return f"vote receiver already running at {receiver_url(self.settings)}"
            if self.pid() is None:
                raise RuntimeError(
                    f"another process answers at {receiver_url(self.settings)} (a receiver of another state "
                    "folder?); stop it, or set KNOWREF60K_RECEIVER_URL"
                )
            self.stop()
        private_dir(self.state_dir)
        self.config_file.write_bytes(wanted)
        command = [
            sys.executable,
            "-m",
            "knowref60k",
            "labelstudio",
            "receiver",
            "serve",
            str(self.config_file),
        ]
        self.wait_healthy(self.spawn(command, self.environment()), self.healthy, timeout)
        return f"vote receiver started at {receiver_url(self.settings)} (log: {self.log_file})"

    def environment(self) -> dict[str, str]:
        """This process's environment with the server's settings, which `serve` reads back."""
        settings = self.settings
        return {
            **os.environ,
            "LABEL_STUDIO_URL": settings.url,
            "LABEL_STUDIO_USERNAME": settings.username,
            "LABEL_STUDIO_PASSWORD": settings.password,
            "LABEL_STUDIO_API_KEY": settings.api_key,
            "KNOWREF60K_PROJECT": settings.project,
            "KNOWREF60K_LABELSTUDIO_DIR": str(settings.state_dir),
            # It runs in the state folder: the home folder it reads is the one of the command that started it.
            HOME_VARIABLE: str(home()),
            # Its client picks the projects' sampling by the database: it must not undo the pipeline's.
            "KNOWREF60K_LABELSTUDIO_DATABASE": settings.database,
        }


def serve(config_file: Path) -> None:
    """Run the receiver in the foreground until it is stopped."""
    # force: the command line that runs it has set up logging for its own commands first.
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown what matters
    started = orjson.loads(config_file.read_bytes())
    fields = started["config"]
    config = LabellingConfig(**{**fields, "controls": tuple(fields["controls"])})
    server = make_server(load_settings(), config, [Path(p) for p in started["items"]])
    log.info("listening on %s:%s", *server.server_address[:2])
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()
