"""Parts the stateful world runs beside the service: a small web site whose pages carry canaries (what a
crawl fetches) and the service's real build `Worker`, run in a thread the test can hold between jobs."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lore.api.jobs import Worker
from lore.engine import Lore

_site_serial = itertools.count(1)


class PageSite:
    """A local HTTP server of HTML pages added per crawl: `pages(texts)` returns the start URL and prefix."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = site.pages.get(self.path.split("?")[0])
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, texts: list[str]) -> tuple[str, str, list[str]]:
        """A new folder of linked pages, one per text: (start URL, prefix, the pages' URLs)."""
        folder = f"/p{next(_site_serial)}/"
        paths = [f"{folder}{'index' if i == 0 else f'page{i}'}.html" for i in range(len(texts))]
        links = "".join(f'<a href="{p}">page {i}</a> ' for i, p in enumerate(paths))
        for path, text in zip(paths, texts, strict=True):
            html = f"<html><head><title>Note</title></head><body><p>{text}</p><p>{links}</p></body></html>"
            self.pages[path] = html.encode()
        return self.url + paths[0], self.url + folder, [self.url + p for p in paths]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class HeldWorker:
    """The service's real `Worker` in a thread of its own; `held()` keeps it from starting a job (a job
    already running finishes first), so a test can act on a build that is still queued."""

    def __init__(self, lore: Lore, poll_s: float) -> None:
        self.worker = Worker(lore, "stateful")
        self.poll_s = poll_s
        self.gate = threading.Lock()
        self.polls = 0
        self.errors: list[str] = []
        self.polled = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="stateful-worker", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            with self.gate:
                try:
                    job = self.worker.run_once()
                except Exception as exc:  # noqa: BLE001 - as `Worker.loop`: the catalog hiccuped; the model reports it
                    self.errors.append(repr(exc))
                    job = None
            with self.polled:
                self.polls += 1
                self.polled.notify_all()
            if job is None:
                self.stop.wait(self.poll_s)

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.gate:
            yield

    def idle_twice(self, timeout: float) -> bool:
        """Wait until the worker has looked for jobs twice more (so whatever was queued has been seen)."""
        with self.polled:
            target = self.polls + 2
            return self.polled.wait_for(lambda: self.polls >= target, timeout)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
