"""The Perfetto trace file and the link that serves it once on 127.0.0.1, with a deadline."""

import gzip
import socket
import threading
import time
import urllib.request

import pytest

from ember._src.profiler import perfetto


def _run_dir(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    (run / "host.xplane.pb").write_bytes(b"xspace")
    return run


def test_writes_perfetto_trace_beside_the_run(tmp_path):
    path = perfetto.write_perfetto_trace(str(_run_dir(tmp_path)))
    assert path.endswith("perfetto_trace.json.gz")
    assert gzip.decompress(open(path, "rb").read()) == b'{"traceEvents": []}'


def test_a_run_without_trace_events_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match="no trace events"):
        perfetto.write_perfetto_trace(str(tmp_path))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_link_serves_the_file_once(tmp_path, capsys):
    path = perfetto.write_perfetto_trace(str(_run_dir(tmp_path)))
    port = _free_port()
    got = []

    def fetch():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{port}/perfetto_trace.json.gz"
                with urllib.request.urlopen(url, timeout=5) as response:
                    got.append((response.headers["Access-Control-Allow-Origin"], response.read()))
                return
            except OSError:
                time.sleep(0.05)

    client = threading.Thread(target=fetch)
    client.start()
    assert perfetto.serve_perfetto_link(path, port=port, timeout_s=10)
    client.join(timeout=10)
    assert got == [("https://ui.perfetto.dev", open(path, "rb").read())]
    assert f"https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/" in capsys.readouterr().out


def test_link_nobody_opens_stops_at_its_deadline(tmp_path, capsys):
    path = perfetto.write_perfetto_trace(str(_run_dir(tmp_path)))
    started = time.monotonic()
    assert not perfetto.serve_perfetto_link(path, port=0, timeout_s=0.3)
    assert time.monotonic() - started < 5
    assert "was not opened within" in capsys.readouterr().out
