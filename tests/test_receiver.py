"""The vote receiver against a real Label Studio started by the test suite: each vote settled as it
arrives through Label Studio's webhooks, the task's overlap raised only as far as its rule can still use,
decided tasks out of the queue without a sync, screened-valid items promoted, bad requests refused, and
the periodic sync repairing what a stopped receiver missed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k_annotation.accounts import create_accounts
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.database import POSTGRES_PORT_OFFSET, LocalPostgres, postgres_bin
from knowref60k_annotation.environment import label_studio_program
from knowref60k_annotation.receiver import Receiver, ReceiverProcess, ReceiverServer, TaskQueue, handler_for
from knowref60k_annotation.server import (
    APPLICATION_DIR,
    Server,
    label_studio_package_dir,
    settle_url,
)
from knowref60k_annotation.settings import SECRET_HEADER, Settings, receiver_url, webhook_secret
from knowref60k_annotation.simulate import AnnotatorSession
from knowref60k_annotation.tasks import CAREFUL
from tests.conftest import free_port, fresh_settings, missing_prerequisite, wait_for
from tests.test_annotation import item

# No audit items: these tests count every slot (the audit share: tests/test_slots.py, tests/test_release.py).
CONFIG = LabellingConfig(controls=(), audit_share=0.0)
LATER = "2099-01-01T00:00:00.000000Z"


class FakeSettler:
    """Stands in for the Settler in the unit tests below: project 7 is the resolution one."""

    def stage_of(self, project: int) -> str | None:
        return RESOLUTION if project == 7 else None


def event(
    annotation: int, task: int = 1, project: int = 7, action: str = "ANNOTATION_CREATED"
) -> dict[str, Any]:
    return {
        "action": action,
        "annotation": {"id": annotation, "updated_at": "2026-01-01T00:00:00Z"},
        "task": {"id": task, "data": {"item_id": f"item-{task}"}},
        "project": {"id": project},
    }


def test_the_queue_hands_a_task_to_one_worker_at_a_time_with_its_events_in_order() -> None:
    queue = TaskQueue()
    queue.put(1, RESOLUTION, event(10))
    queue.put(2, RESOLUTION, event(20, task=2))
    queue.put(1, RESOLUTION, event(11))
    task, stage, events = queue.take()
    assert (task, stage, [e["annotation"]["id"] for e in events]) == (1, RESOLUTION, [10, 11])
    queue.put(1, RESOLUTION, event(12))  # arrives while task 1 is being settled: waits for its turn
    assert queue.take()[0] == 2 and not queue.idle()
    queue.done(1)
    again, _, later = queue.take()
    assert (again, [e["annotation"]["id"] for e in later]) == (1, [12])
    queue.done(1)
    queue.done(2)
    assert queue.idle()


def test_the_receiver_queues_our_votes_once_and_refuses_what_is_not_a_vote() -> None:
    settler = FakeSettler()
    receiver = Receiver(settler, "secret")  # type: ignore[arg-type]
    assert (
        receiver.authorised("secret") and not receiver.authorised("Secret") and not receiver.authorised(None)
    )
    assert receiver.accept(event(1)) == "queued"
    assert receiver.accept(event(1)) == "duplicates"
    assert receiver.accept(event(2, project=8)) == "other_project"
    assert receiver.accept({"action": "PROJECT_UPDATED"}) == "ignored_action"
    assert (
        receiver.accept({"action": "ANNOTATIONS_DELETED", "project": {"id": 7}}) == "deletions_left_to_sync"
    )
    malformed_projects = [{**event(3), "project": project} for project in ([1], 7, "7", {"id": "7"})]
    for bad in (
        [],
        {"action": None},
        {"action": "ANNOTATION_CREATED"},
        {**event(3), "task": {"id": "x"}},
        {**event(3), "task": {"id": True}},
        {**event(3), "annotation": {"id": True, "updated_at": "2026-01-01T00:00:00Z"}},
        {**event(3), "annotation": {"id": 9, "updated_at": [1]}},  # unhashable: a traceback before
        {**event(3), "annotation": {"id": 9, "updated_at": {"a": 1}}},
        {**event(3), "project": {"id": True}},
        *malformed_projects,
    ):
        with pytest.raises(ValueError):
            receiver.accept(bad)
    assert receiver.report()["queued"] == 1 and not receiver.report()["idle"]


def test_silent_connections_wait_at_the_door_and_never_keep_a_webhook_out() -> None:
    """A flood of connections that send nothing, more than the door holds, takes no thread: the oldest
    are closed to make room, the rest at the head deadline; meanwhile a webhook with the secret is
    answered, and one without it is refused at once."""
    receiver = Receiver(FakeSettler(), "secret")  # type: ignore[arg-type]
    server = ReceiverServer(("127.0.0.1", 0), handler_for(receiver), receiver, 20, head_seconds=3)
    server.doorman.max_pending = 100
    threading.Thread(target=server.serve_forever, daemon=True).start()
    before = threading.active_count()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    silent = [socket.create_connection(server.server_address[:2]) for _ in range(300)]
    try:
        wait_for(lambda: receiver.counts["connections_evicted"] == 200, 10, "the oldest to make room")
        assert threading.active_count() == before
        answer = httpx.post(url, json=event(1), headers={SECRET_HEADER: "secret"}, timeout=5)
        assert answer.status_code == 200 and answer.json()["result"] == "queued"
        assert httpx.post(url, json=event(2), headers={SECRET_HEADER: "guess"}, timeout=5).status_code == 403
        assert httpx.post(url, json=event(3), timeout=5).status_code == 403
        # The three requests above arrived at a full door too: each made room by closing one more.
        gone = ("connections_evicted", "connections_cut_before_head")
        wait_for(lambda: sum(receiver.counts[k] for k in gone) == 300, 10, "the rest to be cut")
        assert receiver.counts["connections_cut_before_head"] >= 97
        health = httpx.get(f"{url}health", timeout=5).json()
        assert (health["refused"], health["queued"]) == (2, 1)
    finally:
        for connection in silent:
            connection.close()
        server.shutdown()
        server.server_close()


def test_a_head_that_never_ends_is_cut_at_the_door() -> None:
    receiver = Receiver(FakeSettler(), "secret")  # type: ignore[arg-type]
    server = ReceiverServer(("127.0.0.1", 0), handler_for(receiver), receiver, head_seconds=1.0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(server.server_address[:2]) as connection:
            connection.sendall(b"POST / HTTP/1.1\r\n")
            connection.settimeout(0.1)
            with pytest.raises(OSError):  # cut: the peer resets, or the write finds it closed
                for _ in range(100):  # a byte every 0.1 s
                    connection.sendall(b"X")
                    with contextlib.suppress(TimeoutError):
                        if connection.recv(1) == b"":
                            raise ConnectionResetError
        wait_for(lambda: receiver.counts["connections_cut_before_head"] == 1, 5, "the cut to be counted")
    finally:
        server.shutdown()
        server.server_close()


def test_a_webhook_that_trickles_its_body_is_cut_at_its_deadline() -> None:
    receiver = Receiver(FakeSettler(), "secret")  # type: ignore[arg-type]
    server = ReceiverServer(("127.0.0.1", 0), handler_for(receiver), receiver, deadline=1.0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(server.server_address[:2]) as connection:
            connection.sendall(
                f"POST / HTTP/1.1\r\n{SECRET_HEADER}: secret\r\nContent-Length: 999\r\n\r\n".encode()
            )
            connection.settimeout(0.1)
            with pytest.raises(OSError):  # cut: the peer resets, or the write finds it closed
                for _ in range(100):  # a byte every 0.1 s: never silent for the idle timeout
                    connection.sendall(b"X")
                    with contextlib.suppress(TimeoutError):
                        if connection.recv(1) == b"":
                            raise ConnectionResetError
        assert receiver.counts["connections_cut"] == 1
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def project(label_studio: Settings, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """A project of its own on the shared server, and the receiver for it, stopped afterwards."""
    settings = dataclasses.replace(
        label_studio, project=request.node.name.removeprefix("test_")[:38], state_dir=tmp_path / "state"
    )
    items = tmp_path / "items"
    items.mkdir()
    rows = [item(n) for n in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), items / "RC_2099-01.items.parquet")
    receiver = ReceiverProcess(settings)
    receiver.start(CONFIG, [items])
    try:
        yield settings
    finally:
        receiver.stop()


def raw_post(url: str, headers: dict[str, str]) -> bytes:
    """The reply to a POST with exactly these headers (httpx would mend a wrong Content-Length)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as connection:
        lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n{}").encode())
        return connection.recv(4096)


def settled(settings: Settings) -> bool:
    return ReceiverProcess(settings).settled()


def state(client: LabelStudioClient, task_id: int) -> tuple[int, bool]:
    task: Any = client.sdk.tasks.get(str(task_id))
    return int(task.overlap), bool(task.is_labeled)


def resolvers(client: LabelStudioClient, settings: Settings, count: int) -> list[AnnotatorSession]:
    return [AnnotatorSession(settings, account) for account in create_accounts(client, "resolver", count)]


def vote_and_settle(session: AnnotatorSession, settings: Settings, project: int, choice: str) -> int:
    task = session.next_task(project)
    assert task is not None, f"{session.account.email} was served nothing"
    session.vote(task, choice, "referent")
    wait_for(lambda: settled(settings), 120, "the receiver to settle the vote", interval=0.05)
    return int(task["id"])


@pytest.mark.integration
def test_a_vote_decides_and_the_task_leaves_the_queue_without_a_sync(project: Settings) -> None:
    with LabelStudioClient(project) as client:
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        project_id = client.existing_project(RESOLUTION)
        sessions = resolvers(client, project, 5)
        task_id = vote_and_settle(sessions[0], project, project_id, "antecedent1")
        # Two at creation; after a name, the fewest that could decide are two more (two "neither").
        assert state(client, task_id) == (3, False)
        vote_and_settle(sessions[1], project, project_id, "antecedent1")
        assert state(client, task_id) == (4, False)  # raised: two more names could keep it
        vote_and_settle(sessions[2], project, project_id, "antecedent1")
        vote_and_settle(sessions[3], project, project_id, "antecedent1")
        assert state(client, task_id) == (4, True)  # decided, closed without a collect
        assert sessions[4].next_task(project_id) is None
        health = ReceiverProcess(project).health()
        # The last vote filled the overlap, so Label Studio had closed it; every vote was settled.
        assert health is not None and health["queued"] == 4 and "left_to_sync" not in health
        for session in sessions:
            session.close()


@pytest.mark.integration
def test_a_three_one_split_reopens_one_slot_and_only_one(project: Settings) -> None:
    with LabelStudioClient(project) as client:
        client.push([item(1)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        project_id = client.existing_project(RESOLUTION)
        sessions = resolvers(client, project, 6)
        for session, choice in zip(sessions, ["antecedent1"] * 3 + ["antecedent2"], strict=False):
            task_id = vote_and_settle(session, project, project_id, choice)
        assert state(client, task_id) == (5, False)
        # The fifth resolver takes the one slot; the sixth is served nothing while it is taken.
        assert sessions[4].next_task(project_id) is not None
        assert sessions[5].next_task(project_id) is None
        for session in sessions:
            session.close()


@pytest.mark.integration
def test_wrong_secrets_bad_payloads_and_repeated_events_change_nothing(project: Settings) -> None:
    with LabelStudioClient(project) as client:
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        project_id = client.existing_project(RESOLUTION)
        (session,) = resolvers(client, project, 1)
        task = session.next_task(project_id)
        assert task is not None
        voted = session.vote(task, "antecedent1", "referent")
        wait_for(lambda: settled(project), 120, "the receiver to settle the vote", interval=0.05)
        before = state(client, task["id"])
        # The event as Label Studio sends it, saying the vote was edited (an event not seen before).
        annotation = {**client.sdk.annotations.get(voted).model_dump(mode="json"), "updated_at": LATER}
        stored = client.sdk.tasks.get(str(task["id"])).model_dump(mode="json")
        event = {
            "action": "ANNOTATION_UPDATED",
            "annotation": annotation,
            "task": stored,
            "project": {"id": project_id},
        }
        url, secret = receiver_url(project), webhook_secret(project)
        assert httpx.post(url, json=event, headers={SECRET_HEADER: "wrong"}).status_code == 403
        assert httpx.post(url, json=event).status_code == 403
        assert httpx.post(url, content=b"{not json", headers={SECRET_HEADER: secret}).status_code == 400
        assert httpx.post(url, json={"action": 1}, headers={SECRET_HEADER: secret}).status_code == 400
        listed = {**event, "project": [project_id]}
        assert httpx.post(url, json=listed, headers={SECRET_HEADER: secret}).status_code == 400
        assert raw_post(url, {SECRET_HEADER: secret, "Content-Length": "abc"}).startswith(b"HTTP/1.0 400")
        first = httpx.post(url, json=event, headers={SECRET_HEADER: secret}).json()["result"]
        again = httpx.post(url, json=event, headers={SECRET_HEADER: secret}).json()["result"]
        other = {**event, "project": {"id": 10**9}}
        elsewhere = httpx.post(url, json=other, headers={SECRET_HEADER: secret}).json()["result"]
        assert (first, again, elsewhere) == ("queued", "duplicates", "other_project")
        wait_for(lambda: settled(project), 120, "the receiver to settle", interval=0.05)
        assert state(client, task["id"]) == before
        health = ReceiverProcess(project).health()
        assert health is not None and (health["refused"], health["bad_payloads"]) == (2, 4)
        session.close()


@pytest.mark.integration
def test_a_screened_valid_item_is_promoted_to_resolution_once(project: Settings) -> None:
    with LabelStudioClient(project) as client:
        client.push([item(2)], SCREENING, CONFIG.initial_overlap(SCREENING), seed=0)
        project_id = client.existing_project(SCREENING)
        (screener,) = [AnnotatorSession(project, a) for a in create_accounts(client, "screener", 1)]
        task = screener.next_task(project_id)
        assert task is not None
        screener.vote(task, "valid", "screening")
        wait_for(lambda: settled(project), 120, "the receiver to settle the vote", interval=0.05)
        resolution = client.existing_project(RESOLUTION)
        assert [t["data"]["item_id"] for t in client.export(resolution)] == ["item-00002"]
        assert state(client, task["id"]) == (1, True)
        # The periodic sync's promotion finds it there and imports nothing.
        assert client.has_item(resolution, "item-00002") and not client.has_item(resolution, "item-00009")
        screener.close()


@pytest.mark.integration
def test_an_item_screened_carefully_waits_for_a_second_valid_vote(project: Settings) -> None:
    """A task marked careful at the push: one "valid" vote reopens it for one more screener and promotes
    nothing; the second decides it, closes it and promotes the item."""
    with LabelStudioClient(project) as client:
        client.push([{**item(1), CAREFUL: True}], SCREENING, CONFIG.initial_overlap(SCREENING), seed=0)
        project_id = client.existing_project(SCREENING)
        first, second = [AnnotatorSession(project, a) for a in create_accounts(client, "screener", 2)]
        task = first.next_task(project_id)
        assert task is not None and task["data"][CAREFUL] is True
        first.vote(task, "valid", "screening")
        wait_for(lambda: settled(project), 120, "the receiver to settle the vote", interval=0.05)
        assert state(client, task["id"]) == (2, False) and client.find_project(RESOLUTION) is None
        again = second.next_task(project_id)
        assert again is not None and again["id"] == task["id"]
        second.vote(again, "valid", "screening")
        wait_for(lambda: settled(project), 120, "the receiver to settle the vote", interval=0.05)
        assert state(client, task["id"]) == (2, True)
        assert [t["data"]["item_id"] for t in client.export(client.existing_project(RESOLUTION))] == [
            "item-00001"
        ]
        first.close()
        second.close()


@pytest.mark.integration
def test_the_sync_repairs_what_a_stopped_receiver_missed(project: Settings, tmp_path: Path) -> None:
    with LabelStudioClient(project) as client:
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        project_id = client.existing_project(RESOLUTION)
        sessions = resolvers(client, project, 3)
        ReceiverProcess(project).stop()
        for session in sessions[:2]:
            task = session.next_task(project_id)
            assert task is not None
            session.vote(task, "antecedent1", "referent")  # Label Studio's webhook gets no answer
        # Two votes filled the two slots: Label Studio closed the task by itself, undecided.
        assert state(client, task["id"]) == (2, True) and sessions[2].next_task(project_id) is None
        report = collect(client, tmp_path / "votes", CONFIG)
        assert report["closed_tasks"][RESOLUTION] == {"closed": 0, "reopened": 1, "overlap_set": 0}
        assert state(client, task["id"]) == (4, False)
        assert sessions[2].next_task(project_id) is not None
        for session in sessions:
            session.close()


@pytest.mark.integration
def test_label_studio_on_postgresql_settles_votes_and_collects(tmp_path: Path) -> None:
    """A Label Studio of its own on a PostgreSQL of its own (Debian's, in a data folder of its own):
    migrated on first start, settled through the receiver, collected like the SQLite one."""
    from knowref60k.core.errors import UserError

    try:
        postgres_bin()
    except UserError as error:
        missing_prerequisite(str(error))
    settings = fresh_settings("knowref60k on postgresql", tmp_path / "state", "postgresql")
    server = Server(settings)
    database = LocalPostgres(settings.state_dir, settings.port + POSTGRES_PORT_OFFSET)
    try:
        server.start()
        ReceiverProcess(settings).start(CONFIG, [])
        assert not (server.data_dir / "label_studio.sqlite3").exists()  # its data is in PostgreSQL
        # Served by gunicorn's worker processes, not Label Studio's single-process server.
        assert httpx.get(f"{settings.url}/health").headers["server"].startswith("gunicorn")
        assert len(children(server)) == settings.workers
        # The receiver's requests go to a worker of their own, not behind the annotators' requests.
        settle_worker = server.settle_worker()
        assert settle_url(settings) == settle_worker.settings.url != settings.url
        assert httpx.get(f"{settle_worker.settings.url}/health").headers["server"].startswith("gunicorn")
        assert f"settling through Label Studio at {settle_worker.settings.url}" in wait_for_log(settings)
        with LabelStudioClient(settings) as client:
            client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
            project_id = client.existing_project(RESOLUTION)
            assert client.sdk.projects.get(id=project_id).sampling == "Sequential sampling"
            sessions = resolvers(client, settings, 4)
            for session in sessions:
                task_id = vote_and_settle(session, settings, project_id, "antecedent1")
            assert state(client, task_id) == (4, True)
            # The labelling frontend's slash-less API paths reach the same views.
            assert answers(settings, f"/api/tasks/{task_id}") == answers(settings, f"/api/tasks/{task_id}/")
            # The access gate holds in every worker process: nobody votes in another's name, and an
            # annotator lists its stage's projects only.
            forged = {"result": [], "completed_by": sessions[1].account.user_id}
            refused = sessions[0].http.post(f"/api/tasks/{task_id}/annotations/", json=forged)
            assert refused.status_code == 403 and "access gate" in refused.text
            listed = sessions[0].http.get("/api/projects/").json()["results"]
            assert [project["id"] for project in listed] == [project_id]
            report = collect(client, tmp_path / "votes", CONFIG)
            for session in sessions:
                session.close()
        assert report["votes"] == 4 and report["closed_tasks"][RESOLUTION]["closed"] == 0
        # Its connections outlive the requests (Django's default opens one for each request).
        before = sessions_opened(database)
        assert project_list_answers(settings, 60) == {200}
        assert sessions_opened(database) - before < 30
        database.stop()  # a restart closes them all: the next requests open new ones, none fails
        database.start()
        assert project_list_answers(settings, 30) == {200}
    finally:
        server.stop()
        database.remove()
    assert not database.data_dir.exists()
    assert settle_worker.pid() is None  # stopped with the server


def wait_for_log(settings: Settings) -> str:
    """The vote receiver's log once it says where it settles."""
    log = ReceiverProcess(settings).log_file
    wait_for(lambda: "settling through" in log.read_text(), 30, "the receiver to say where it settles")
    return log.read_text()


def admin_http(settings: Settings) -> httpx.Client:
    """A client of the server's API with the admin's token."""
    return httpx.Client(base_url=settings.url, headers={"Authorization": f"Token {settings.api_key}"})


def answers(settings: Settings, path: str) -> tuple[int, Any]:
    with admin_http(settings) as http:
        response = http.get(path)
    return response.status_code, response.json()


@pytest.mark.integration
def test_slash_less_api_paths_are_routed_once_by_label_studios_own_url_table(tmp_path: Path) -> None:
    """Label Studio's frontend calls its API without trailing slashes; Label Studio runs such a request to
    a 404 and again with the slash. The application gunicorn serves appends the slash first, where only
    the slashed path is one of Label Studio's (its real URL table, in its own environment)."""
    paths = {
        "/api/projects/3/next": True,
        "/api/tasks/7": True,
        "/api/tasks/7/annotations": True,
        "/api/projects/3/next/": False,  # already slashed
        "/api/no-such-view": False,  # neither form is a view: left to Label Studio's 404
        "/projects/3/data": False,  # pages outside the API are left to Label Studio
    }
    server = Server(Settings("http://127.0.0.1:1", "u", "p", "k", state_dir=tmp_path))
    # Each path through the application, with Label Studio's own replaced by one that says what it got.
    program = (
        "import sys, json, knowref60k_labelstudio as app\n"
        "app.label_studio_application = lambda environ, start: [environ['PATH_INFO']]\n"
        "print(json.dumps([app.application({'PATH_INFO': p}, None)[0] for p in sys.argv[1:]]))"
    )
    done = subprocess.run(
        [str(label_studio_program().parent / "python"), "-c", program, *paths],
        env=server.environment() | {"PYTHONPATH": f"{label_studio_package_dir()}:{APPLICATION_DIR}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    served = json.loads(done.stdout.splitlines()[-1])
    assert served == [path + "/" if slashed else path for path, slashed in paths.items()]


def test_a_port_taken_by_another_server_is_not_mistaken_for_the_receivers_worker(tmp_path: Path) -> None:
    """Something else answering on the worker's port (another Label Studio) gets none of the receiver's
    requests: it settles through the server itself, and the start line says why."""
    settings = Settings(
        f"http://127.0.0.1:{free_port()}", "u", "p", "k", state_dir=tmp_path, database="postgresql"
    )
    server = Server(settings)
    other = ThreadingHTTPServer(("127.0.0.1", server.settle_worker().settings.port), AnswersHealth)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        note = server.start_settle_worker({}, timeout=5)
        assert "answers for another server, so the vote receiver settles through the server" in note
        assert settle_url(settings) == settings.url
    finally:
        other.shutdown()
        other.server_close()


class AnswersHealth(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def project_list_answers(settings: Settings, requests: int) -> set[int]:
    """The status codes of `requests` requests for the project list, one after another."""
    with admin_http(settings) as http:
        return {http.get("/api/projects/").status_code for _ in range(requests)}


def sessions_opened(database: LocalPostgres) -> int:
    """Sessions ever opened to the database, this query's own included."""
    query = "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
    done = subprocess.run(
        [str(postgres_bin() / "psql"), database.url(), "-Atc", query],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def children(server: Server) -> list[int]:
    """The worker processes of the server's main process."""
    pid = server.pid()
    assert pid is not None
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_postgresql_is_served_by_several_processes_and_sqlite_by_one_both_behind_the_gate(
    tmp_path: Path,
) -> None:
    """The server command: Label Studio's application with the access gate under gunicorn, with the
    configured workers on PostgreSQL, one on SQLite (one writer at a time) and wherever one is asked for."""
    from knowref60k_annotation.settings import with_config

    config = tmp_path / "k.toml"
    config.write_text('[labelstudio]\ndatabase = "postgresql"\nworkers = 5\n')
    base = Settings("http://127.0.0.1:8123", "u", "p", "k", state_dir=tmp_path)
    command = Server(with_config(base, config)).command()
    assert Path(command[0]).name == "gunicorn"
    assert command[1] == "knowref60k_labelstudio:application"  # persistent database connections
    assert command[command.index("--workers") + 1] == "5"
    assert command[command.index("--bind") + 1] == "127.0.0.1:8123"
    for single in (base, dataclasses.replace(base, database="postgresql", workers=1)):
        command = Server(single).command()
        assert command[1] == "knowref60k_labelstudio:application"
        assert command[command.index("--workers") + 1] == "1"


@pytest.mark.parametrize("database", ["foo://", "mysql://u@h/db", "postgresql://host-without-a-name"])
def test_a_database_label_studio_cannot_use_is_refused_naming_the_file(tmp_path: Path, database: str) -> None:
    from knowref60k.core.errors import UserError
    from knowref60k.labelling.labelstudio_table import load_labelstudio_config

    config = tmp_path / "k.toml"
    config.write_text(f'[labelstudio]\ndatabase = "{database}"\n')
    with pytest.raises(UserError, match=r"invalid setting in .*k\.toml: .*database must be sqlite"):
        load_labelstudio_config(config)
    for usable in ("sqlite", "postgresql", "postgresql://u:p@db.example:5433/labels"):
        config.write_text(f'[labelstudio]\ndatabase = "{usable}"\n')
        assert load_labelstudio_config(config).database == usable


def test_the_pipeline_refuses_a_bad_labelstudio_table_before_reading_the_dumps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    config = tmp_path / "k.toml"
    config.write_text('[labelstudio]\ndatabase = "foo://"\n')
    dump = tmp_path / "RC_x.ndjson"
    dump.write_text('{"id": "a", "body": "Hello there."}\n')
    out = tmp_path / "out"
    arguments = ["run", str(dump), "--out", str(out), "--config", str(config), "--label-studio"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2
    assert "k.toml: Label Studio's database must be" in " ".join(result.output.split())
    assert not out.exists()


def test_label_studio_keeps_connections_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from knowref60k.core.errors import UserError
    from knowref60k_annotation.server import CONNECTION_MAX_AGE, DEFAULT_CONNECTION_MAX_AGE

    server = Server(Settings("http://127.0.0.1:1", "u", "p", "k"))
    monkeypatch.delenv(CONNECTION_MAX_AGE, raising=False)
    assert server.environment()[CONNECTION_MAX_AGE] == str(DEFAULT_CONNECTION_MAX_AGE)
    monkeypatch.setenv(CONNECTION_MAX_AGE, "0")
    assert server.environment()[CONNECTION_MAX_AGE] == "0"
    for bad in ("five", "-1", "2.5"):
        monkeypatch.setenv(CONNECTION_MAX_AGE, bad)
        with pytest.raises(
            UserError, match=rf"KNOWREF60K_DB_CONN_MAX_AGE must be a whole number .* not '{bad}'"
        ):
            server.environment()


@pytest.mark.parametrize("workers", [0, -2, 65, 100_000])
def test_a_worker_count_out_of_bounds_is_a_clear_error(tmp_path: Path, workers: int) -> None:
    from knowref60k.core.errors import UserError
    from knowref60k_annotation.settings import with_config

    config = tmp_path / "k.toml"
    config.write_text(f"[labelstudio]\nworkers = {workers}\n")
    with pytest.raises(UserError, match=rf"workers must be a whole number from 1 to 64, not {workers}$"):
        with_config(Settings("http://127.0.0.1:1", "u", "p", "k"), config)


@pytest.mark.integration
def test_a_malformed_vote_is_refused_and_neither_the_receiver_nor_collect_stops(
    project: Settings, tmp_path: Path
) -> None:
    """Any account can post a result that is no choice through the API (Label Studio answers 201): it is
    refused with its reason and account, and the votes around it still count."""
    with LabelStudioClient(project) as client:
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        project_id = client.existing_project(RESOLUTION)
        sessions = resolvers(client, project, 2)
        task = sessions[0].next_task(project_id)
        assert task is not None
        malformed = {"result": [{"type": "choices", "value": {"choices": [["x"]]}}]}
        posted = sessions[0].http.post(f"/api/tasks/{task['id']}/annotations/", json=malformed)
        assert posted.status_code == 201
        wait_for(lambda: settled(project), 120, "the receiver to take the malformed vote", interval=0.05)
        vote_and_settle(sessions[1], project, project_id, "antecedent1")  # the receiver still settles
        report = collect(client, tmp_path / "votes", CONFIG)
        for session in sessions:
            session.close()
    assert report["votes"] == 1 and report["refused_votes"] == {"malformed_result": 1}
    (refused,) = [json.loads(line) for line in (tmp_path / "votes" / "refused-votes.jsonl").open()]
    assert refused["reason"] == "malformed_result" and refused["email"] == sessions[0].account.email
    assert refused["choice"] == '[{"type":"choices","value":{"choices":[["x"]]}}]'
    assert any("not one of the stage's choices" in line for line in report["refused_lines"])


@pytest.mark.integration
def test_a_forged_event_with_the_secret_changes_nothing_the_stored_task_does_not_call_for(
    project: Settings,
) -> None:
    """Whoever holds the secret can send any event: the receiver reads the task back from Label Studio, so
    a vote that is not stored decides nothing, promotes nothing and closes nothing, and a task of another
    project is not touched."""
    with LabelStudioClient(project) as client:
        client.push([item(2)], SCREENING, CONFIG.initial_overlap(SCREENING), seed=0)
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        screening = client.existing_project(SCREENING)
        (screening_task,) = client.export(screening)
        (resolution_task,) = client.export(client.existing_project(RESOLUTION))
        before = [state(client, t["id"]) for t in (screening_task, resolution_task)]
        url, secret = receiver_url(project), webhook_secret(project)
        (screener,) = create_accounts(client, "screener", 1)
        forged_vote = {
            "id": 99999,
            "completed_by": client.user_id(screener.email),
            "result": [{"type": "choices", "from_name": "screening", "value": {"choices": ["valid"]}}],
            "created_at": LATER,
            "updated_at": LATER,
        }
        claims = {**screening_task, "overlap": 1, "is_labeled": True, "total_annotations": 1}
        for number, task in enumerate((claims, {**resolution_task, "data": screening_task["data"]})):
            event = {
                "action": "ANNOTATION_CREATED",
                "annotation": {**forged_vote, "id": 99999 + number, "task": task["id"]},
                "task": task,
                "project": {"id": screening},
            }
            assert httpx.post(url, json=event, headers={SECRET_HEADER: secret}).json()["result"] == "queued"
        wait_for(lambda: settled(project), 120, "the receiver to settle the forged events", interval=0.05)
        assert [state(client, t["id"]) for t in (screening_task, resolution_task)] == before
        assert not client.has_item(client.existing_project(RESOLUTION), screening_task["data"]["item_id"])
        health = ReceiverProcess(project).health()
        # The screening task was set to the state its stored votes (none) call for: the one it had.
        assert health is not None and health["not_in_project"] == 1 and health["queued"] == 2


@pytest.mark.integration
def test_two_starts_at_once_make_one_server_that_stop_stops(
    label_studio_template: Server, tmp_path: Path
) -> None:
    from tests.conftest import server_from_template

    server = server_from_template(label_studio_template, tmp_path / "labelstudio")
    answers: list[str] = []
    starts = [
        threading.Thread(target=lambda: answers.append(Server(server.settings).start())) for _ in range(2)
    ]
    for start in starts:
        start.start()
    for start in starts:
        start.join(timeout=300)
    try:
        assert sorted(answer.split(" at ")[0] for answer in answers) == [
            "Label Studio already running",
            "Label Studio started",
        ]
        pid = server.pid()
        assert pid is not None and server.healthy()
    finally:
        server.stop()
    assert not server.healthy() and server.pid() is None
