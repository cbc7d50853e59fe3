# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""AWX's job endpoint on loopback, for ``plan_slice: awx``: AWX itself cannot run here. It serves what AWX's
``JobSerializer`` gives for a job (``awx/api/serializers.py``: ``job_slice_number``, ``job_slice_count``) at AWX's
path or Automation Platform's, and keeps each request's path and ``Authorization`` header."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeAwx:
    """AWX's job endpoint on loopback: ``jobs`` (id -> record) served at ``paths`` (AWX's /api/ or the platform's
    /api/controller/); each request's path and Authorization header kept."""

    def __init__(self, jobs: dict, paths=("/api/",), status: int = 200, body: bytes | None = None):
        self.jobs, self.paths, self.status, self.body = jobs, paths, status, body
        self.seen: list = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  (http.server's name)
                fake.seen.append((self.path, self.headers.get("Authorization", "")))
                code, payload = fake.answer(self.path)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str) -> tuple[int, bytes]:
        if self.status != 200:
            return self.status, b'{"detail": "Authentication credentials were not provided."}'
        for prefix in self.paths:
            if path.startswith(f"{prefix}v2/jobs/"):
                job = path[len(f"{prefix}v2/jobs/"):].strip("/")
                if job in self.jobs:
                    return 200, self.body if self.body is not None else json.dumps(self.jobs[job]).encode()
        return 404, b'{"detail": "Not found."}'


def job_of(number: int, count: int) -> dict:
    """A job record as AWX's JobSerializer gives it (the fields read here, and a few beside them)."""
    return {"id": 40 + number, "type": "job", "status": "running", "job_slice_number": number,
            "job_slice_count": count, "launch_type": "workflow", "allow_simultaneous": True}
