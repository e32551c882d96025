"""OpenAI-compatible chat servers whose answers a test scripts: the shared HTTP part.

Each double stands in for a remote model provider, which tests can neither reach nor steer.
The server, the socket, the HTTP client and everything on the toolkit's side are real; only
the answers are scripted (``answer``).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One answer of a double: HTTP status, extra headers, a delay before it, JSON body."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: dict | None = None


class ChatServerDouble:
    """A threading HTTP server on 127.0.0.1 (a free port); ``GET`` lists ``model_id``,
    ``POST`` is answered by ``answer(raw request body)``. Use it as a context manager."""

    model_id = "double-model"

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, raw: bytes) -> Reply:
        raise NotImplementedError

    def models(self) -> Reply:
        """The answer to ``GET`` (the model list a client checks the endpoint with)."""
        return Reply(body={"object": "list", "data": [{"id": self.model_id, "object": "model"}]})

    def finished(self) -> None:
        """Called after every POST, whether its answer reached the client or not."""

    def __enter__(self) -> Any:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(double: ChatServerDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._send(double.models())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                reply = double.answer(raw)
                time.sleep(reply.delay_s)
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): slow replies are there to cause that
            finally:
                double.finished()

        def _send(self, reply: Reply) -> None:
            payload = json.dumps(reply.body if reply.body is not None else {}).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler
