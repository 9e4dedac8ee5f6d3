"""Traces for the Perfetto UI (ui.perfetto.dev): the file, and a link that opens it.

XLA's profiler writes each run's events as Chrome trace JSON (``<host>.trace.json.gz``) beside
the XSpace; Perfetto reads that format, under the name JAX gives it. The link serves the file
once from this process on 127.0.0.1 (the UI, running in the user's browser, fetches it from
there), with a deadline so that a link nobody opens does not hang the program.
"""

from __future__ import annotations

import glob
import http.server
import os
import shutil
import time

PERFETTO_TRACE = "perfetto_trace.json.gz"
PERFETTO_PORT = 9001  # the port JAX serves the trace on (the UI allows it)
LINK_TIMEOUT_S = 300.0


def write_perfetto_trace(run_dir: str) -> str:
    """Write ``perfetto_trace.json.gz`` into a run's directory; return its path."""
    found = glob.glob(os.path.join(run_dir, "*.trace.json.gz"))
    if not found:
        raise RuntimeError(f"the profiler wrote no trace events (*.trace.json.gz) in {run_dir}")
    path = os.path.join(run_dir, PERFETTO_TRACE)
    shutil.copyfile(max(found, key=os.path.getmtime), path)
    return path


def serve_perfetto_link(
    path: str, port: int = PERFETTO_PORT, timeout_s: float = LINK_TIMEOUT_S
) -> bool:
    """Print a link opening ``path`` in the Perfetto UI and serve the file until the UI has
    fetched it, or ``timeout_s`` passes. Returns whether it was fetched."""
    with open(path, "rb") as file:
        payload = file.read()
    fetched = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "https://ui.perfetto.dev")
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            fetched.append(True)

        def log_message(self, format: str, *args: object) -> None:
            pass  # no request lines on stderr

    deadline = time.monotonic() + timeout_s
    with http.server.HTTPServer(("127.0.0.1", port), Handler) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/{PERFETTO_TRACE}"
        print(f"Open the trace in Perfetto: https://ui.perfetto.dev/#!/?url={url}", flush=True)
        while not fetched:
            left = deadline - time.monotonic()
            if left <= 0:
                print(
                    f"the Perfetto link was not opened within {timeout_s:.0f} s; the trace "
                    f"stays in {path}",
                    flush=True,
                )
                return False
            server.timeout = min(left, 1.0)
            server.handle_request()
    return True
