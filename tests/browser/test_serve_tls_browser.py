"""Issue 30: `python -m bertviz_lite.serve --tls-cert … --tls-key …` serves HTTPS (haproxy terminates TLS with a
self-signed certificate made here); cookies are Secure; the client address the app sees is haproxy's, not one a
browser claims in its own X-Forwarded-For."""

from __future__ import annotations

import datetime
import ssl
import stat
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.server import cookie_handoff, database, haproxy, live_class
from devtools.server import REPO, free_port, serve_command
from devtools.waiting import wait_until
from tests.browser.driver import NEEDS_DEFAULT_MODEL

pytestmark = pytest.mark.browser
UNCHECKED = ssl._create_unverified_context()  # the certificate is self-signed


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return folder / "cert.pem", folder / "key.pem"


@dataclass
class Served:
    url: str
    run_dir: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if haproxy.haproxy_binary() is None:
        pytest.skip(haproxy.INSTALL_HINT)
    pytest.importorskip("cryptography")
    run_dir = tmp_path_factory.mktemp("serve-tls")
    cert, key = self_signed(run_dir)
    port = free_port()
    out = run_dir / "serve.out"
    with open(out, "w") as handle:
        serve = subprocess.Popen(
            serve_command(1, port, run_dir, "--tls-cert", str(cert), "--tls-key", str(key)),
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(
            lambda: serve.poll() is not None or "open https://" in out.read_text(), 180, "serve to say open"
        )
        assert serve.poll() is None, out.read_text()
        yield Served(f"https://127.0.0.1:{port}", run_dir)
    finally:
        serve.terminate()
        serve.wait(30)
    pem = _pem_of(run_dir)
    assert not pem.exists()  # the key's copy went with haproxy


def _pem_of(run_dir: Path) -> Path:
    config = (run_dir / "haproxy.cfg").read_text()
    return Path(config.split(" ssl crt ", 1)[1].split()[0])


def _get(url: str, headers: dict[str, str] | None = None):
    return urllib.request.urlopen(
        urllib.request.Request(url, headers=headers or {}), context=UNCHECKED, timeout=20
    )


def test_serve_answers_over_https_with_secure_cookies_and_a_private_key_file(served):
    with _get(f"{served.url}{haproxy.HEALTH_PATH}") as response:
        assert response.read() == b"ok"
        sticky = next(c for c in response.headers.get_all("set-cookie") if c.startswith(f"{haproxy.COOKIE}="))
    assert "Secure" in sticky and "HttpOnly" in sticky
    assert stat.S_IMODE(_pem_of(served.run_dir).stat().st_mode) == 0o600
    nonce = cookie_handoff.park(cookie_handoff.ParkedCookie(cookie_handoff.LEAD_COOKIE, "KKKKKK.secret", 60))
    with _get(
        f"{served.url}{cookie_handoff.ROUTE_PATH}?n={nonce}", {"X-Forwarded-Proto": "http"}
    ) as response:
        cookie = response.headers["set-cookie"]  # haproxy says https, whatever the browser claimed
    assert cookie.startswith(f"{cookie_handoff.LEAD_COOKIE}=") and "Secure" in cookie and "HttpOnly" in cookie


@NEEDS_DEFAULT_MODEL
def test_a_forged_x_forwarded_for_does_not_change_the_address_the_class_counts(served, browser):
    code, _ = live_class.start_class(live_class.Position("minilm-english", "The cat sat.", "It slept."))
    context = browser.new_context(
        ignore_https_errors=True, extra_http_headers={"X-Forwarded-For": "203.0.113.9"}
    )
    page = context.new_page()
    page.goto(f"{served.url}/class?class={code}")
    page.get_by_text(f"Step 1 of {len(walk.STEPS)}").wait_for(timeout=90_000)
    db = database.connection()
    address = db.execute("SELECT address FROM class_students WHERE code = ?", (code,)).fetchone()[0]
    assert address == live_class.client_digest("local")  # haproxy's 127.0.0.1, not the claimed 203.0.113.9
    assert address != live_class.client_digest("203.0.113.9")
    context.close()
