"""Hostile uploads to a real `streamlit run app.py`: refused at the gate in front of Streamlit's upload route
(server/upload_gate.py) before the server holds their bytes, while the page's own uploader keeps working."""

from __future__ import annotations

import http.client
import os
import select
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bertviz_lite import limits
from bertviz_lite.server.upload_gate import UPLOAD_PATH
from devtools.server import listening_pid
from tests.browser.driver import open_page, wait_for_idle

pytestmark = pytest.mark.browser
BOUNDARY = "gate-test"


def resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def multipart(size: int) -> bytes:
    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'.encode()
    return head + b"x" * size + f"\r\n--{BOUNDARY}--\r\n".encode()


class Visitor:
    """PUTs to the upload route as the page's session, with its XSRF cookie and header."""

    def __init__(self, base_url: str, session: str, xsrf: str):
        self.host = urlsplit(base_url).netloc
        self.session = session
        self.xsrf = xsrf

    def headers(self, **extra) -> dict[str, str]:
        return {
            "Cookie": f"_streamlit_xsrf={self.xsrf}",
            "X-Xsrftoken": self.xsrf,
            "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
            **extra,
        }

    def put(self, file_id: str, body: bytes, session: str | None = None) -> tuple[int, str]:
        connection = http.client.HTTPConnection(self.host, timeout=60)
        path = f"{UPLOAD_PATH}{session or self.session}/{file_id}"
        connection.request("PUT", path, body, self.headers())
        answer = connection.getresponse()
        return answer.status, answer.read().decode()

    def put_headers_only(self, file_id: str, length: int) -> int:
        """Declare `length` bytes and send none: the answer must come before the body."""
        connection = http.client.HTTPConnection(self.host, timeout=60)
        connection.putrequest("PUT", f"{UPLOAD_PATH}{self.session}/{file_id}")
        for name, value in self.headers(**{"Content-Length": str(length)}).items():
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status

    def put_chunked(self, file_id: str, megabytes: int) -> tuple[int, int]:
        """Stream `megabytes` chunked (no Content-Length) until the server answers; (status, bytes sent)."""
        host, port = self.host.split(":")
        sock = socket.create_connection((host, int(port)), timeout=60)
        head = f"PUT {UPLOAD_PATH}{self.session}/{file_id} HTTP/1.1\r\nHost: {self.host}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in self.headers(**{"Transfer-Encoding": "chunked"}).items())
        sock.sendall((head + "\r\n").encode())
        chunk = b"x" * limits.MB
        sent = 0
        try:
            while (
                sent < megabytes * limits.MB and not select.select([sock], [], [], 0)[0]
            ):  # until it answers
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: what it said is in the socket
        answer = sock.recv(200).decode(errors="replace")
        sock.close()
        return int(answer.split()[1]), sent


def test_hostile_uploads_are_refused_before_the_server_holds_them(streamlit_url, page, tmp_path):
    open_page(page, streamlit_url, "train")
    form = page.locator('[data-testid="stExpander"] details', has_text="Start a new run")
    if form.get_attribute("open") is None:
        form.locator("summary").click()
    page.get_by_text("Upload a .txt file").click()
    wait_for_idle(page)
    corpus = tmp_path / "stories.txt"
    corpus.write_text("A first story. It ends here.\n\nA second story. It ends too.\n")
    uploader = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    with page.expect_request(lambda r: r.method == "PUT" and UPLOAD_PATH in r.url) as put:
        uploader.set_input_files(corpus)
    assert put.value.response().status == 204  # the page's own uploader works through the gate
    session = put.value.url.split("/")[-2]
    xsrf = next(c["value"] for c in page.context.cookies() if c["name"] == "_streamlit_xsrf")
    visitor = Visitor(streamlit_url, session, xsrf)
    pid = listening_pid(int(urlsplit(streamlit_url).port))
    rss = resident_mb(pid)
    cpu = cpu_s(pid)

    assert visitor.put_headers_only("big-declared", 850 * limits.MB) == 413  # the page takes 5 MB
    status, sent = visitor.put_chunked("big-chunked", 200)
    assert (
        status == 413 and sent < 40 * limits.MB
    )  # cut off as the bytes arrived (5 MB, and what sockets buffer)
    assert (
        visitor.put("second-file", multipart(4_000_000))[0] == 204
    )  # the uploader's limit is 5 MB a session
    status, reason = visitor.put("third-file", multipart(4_000_000))
    assert status == 413 and "earlier upload" in reason
    assert (
        visitor.put("no-page", multipart(1000), session="0" * 36)[0] == 403
    )  # a session that showed no uploader
    assert resident_mb(pid) - rss < 100 and cpu_s(pid) - cpu < 1.0

    replacement = (
        tmp_path / "other.txt"
    )  # the uploader replaces its file: the old one goes, the new one comes in
    replacement.write_text("Another story. " * 100_000)  # 1.5 MB
    with page.expect_request(lambda r: r.method == "PUT" and UPLOAD_PATH in r.url) as put:
        uploader.set_input_files(replacement)
    assert put.value.response().status == 204
