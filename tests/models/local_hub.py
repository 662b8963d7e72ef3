"""A Hugging Face Hub on 127.0.0.1, for tests of `mmfreeze configs pull`: a real HTTP server in a
thread, serving exactly what ``huggingface_hub.hf_hub_download`` asks for (huggingface_hub 2.x,
``file_download.py``):

- ``HEAD /{repo_id}/resolve/{revision}/{filename}``: the file's metadata in headers —
  ``X-Repo-Commit`` (the commit the revision resolves to), ``ETag`` (the git blob id) and
  ``Content-Length``. Errors are 404s carrying ``X-Error-Code`` (``RepoNotFound``,
  ``RevisionNotFound``, ``EntryNotFound``), which huggingface_hub turns into its typed errors.
- ``GET`` on the same URL: the file's bytes.

Anything else (huggingface_hub also asks ``/api/agent-harnesses`` for its user agent, best effort)
gets a 404. Repository ids match case-insensitively, as on the Hub. Point huggingface_hub at it with
``HF_ENDPOINT=hub.endpoint``. The server stops when the ``with`` block ends (sockets time out
after a few seconds, so a stuck client cannot hold it).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

_RESOLVE = re.compile(r"^/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<revision>[^/]+)/(?P<filename>[^?]+)")


@dataclass(frozen=True)
class HubRepo:
    repo_id: str
    commit: str
    files: Mapping[str, bytes]


def git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


class LoopbackServer:
    """A real HTTP server on 127.0.0.1, in a thread, for a ``with`` block; ``_handler`` answers."""

    def _serve(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class LocalHub(LoopbackServer):
    def __init__(self, repos: Mapping[str, Mapping[str, bytes]]) -> None:
        self.repos = {
            repo_id.lower(): HubRepo(repo_id, hashlib.sha1(repo_id.encode()).hexdigest(), files)
            for repo_id, files in repos.items()
        }
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request, in order."""
        self._serve()

    def commit_of(self, repo_id: str) -> str:
        return self.repos[repo_id.lower()].commit

    def file_requests(self) -> list[tuple[str, str]]:
        """(method, path) of the requests for repository files (``/resolve/``)."""
        return [(method, path) for method, path in self.requests if _RESOLVE.match(path)]

    def downloads(self) -> list[str]:
        return [path for method, path in self.file_requests() if method == "GET"]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 5

            def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
                self._answer(body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(body=True)

            def _answer(self, *, body: bool) -> None:
                hub.requests.append((self.command, self.path))
                match = _RESOLVE.match(self.path)
                repo = hub.repos.get(match["repo"].lower()) if match else None
                if match is None or repo is None:
                    return self._error("RepoNotFound", "Repository not found")
                if match["revision"] not in ("main", repo.commit):
                    return self._error("RevisionNotFound", "Invalid rev id", commit=None)
                content = repo.files.get(match["filename"])
                if content is None:
                    return self._error("EntryNotFound", "Entry not found", commit=repo.commit)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.send_header("ETag", f'"{git_blob_id(content)}"')
                self.send_header("X-Repo-Commit", repo.commit)
                self.end_headers()
                if body:
                    self.wfile.write(content)

            def _error(self, code: str, message: str, commit: str | None = None) -> None:
                self.send_response(404)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                if commit is not None:
                    self.send_header("X-Repo-Commit", commit)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler
