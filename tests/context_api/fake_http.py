"""A scripted local HTTP server for the client and hook tests (no database, no network)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False  # wait for FakeServer.release before answering
    trickle: bool = False  # send the body in ~50 pieces, 0.1 s apart (each gap is shorter than the timeout)


@dataclass
class Recorded:
    method: str
    path: str
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeServer:
    """Records every request and answers with ``queue`` (in order), then ``reply``."""

    def __init__(self, default_headers: dict[str, str] | None = None) -> None:
        self.requests: list[Recorded] = []
        self.queue: list[Reply] = []
        self.reply = Reply(500)
        self.release = threading.Event()
        self.default_headers = dict(default_headers or {})
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                try:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    server.requests.append(Recorded(self.command, self.path, self.headers, body))
                    reply = server.queue.pop(0) if server.queue else server.reply
                    if reply.hold:
                        server.release.wait(10)
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    if not reply.trickle:
                        self.wfile.write(reply.body)
                        return
                    step = len(reply.body) // 50 + 1
                    for start in range(0, len(reply.body), step):
                        self.wfile.write(reply.body[start : start + step])
                        self.wfile.flush()
                        if server.release.wait(0.1):
                            return
                except OSError:
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def respond(
        self,
        status: int,
        payload: object = None,
        *,
        raw: bytes | None = None,
        content_type: str = "application/json",
        hold: bool = False,
        trickle: bool = False,
    ) -> None:
        body = raw if raw is not None else (b"" if payload is None else json.dumps(payload).encode())
        headers = {"Content-Type": content_type, **self.default_headers}
        self.reply = Reply(status, body, headers, hold, trickle)

    @property
    def last(self) -> Recorded:
        assert len(self.requests) == 1
        return self.requests[0]

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
