"""`python -m bertviz_lite.serve`: one line and exit 2 for bad input or a missing haproxy; the generated HAProxy
config is one haproxy itself accepts (the running balancer: tests/browser/test_serve_browser.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bertviz_lite.server import balancer, haproxy

REPO = Path(__file__).resolve().parents[2]


def serve(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bertviz_lite.serve", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--workers", "0"], "from 1 to 16 workers, not 0"),
        (["--workers", "two"], "a whole number from 1 to 16 is needed, not 'two'"),
        (["--workers", "2", "--port", "99999"], "a port number from 1 to 65535 is needed, not '99999'"),
        ([], "the following arguments are required: --workers"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(args, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        balancer.main(args)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.count("\n") == 1 and words in err, err


def test_a_missing_haproxy_says_how_to_install_it_and_exits_2(tmp_path):
    done = serve("--workers", "2", **{haproxy.HAPROXY_SETTING: str(tmp_path / "no-haproxy")})
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.strip() == f"serve: {haproxy.INSTALL_HINT}"
        and "apt-get install -y haproxy" in done.stderr
    )


def test_the_config_is_sticky_websocket_friendly_health_checked_and_valid(tmp_path):
    text = haproxy.haproxy_config("0.0.0.0", 8501, [40001, 40002])
    assert "bind 0.0.0.0:8501" in text and f"cookie {haproxy.COOKIE} insert indirect nocache" in text
    assert (
        "server w0 127.0.0.1:40001 cookie w0 check" in text
        and "server w1 127.0.0.1:40002 cookie w1 check" in text
    )
    assert f"uri {haproxy.HEALTH_PATH}" in text and f"timeout tunnel {haproxy.TUNNEL_TIMEOUT}" in text
    binary = haproxy.haproxy_binary()
    if binary is None:
        pytest.skip(haproxy.INSTALL_HINT)
    config = haproxy.write_config(tmp_path, "127.0.0.1", 8501, [40001, 40002])
    check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_port_in_use_is_one_line_and_exit_2_before_any_worker_starts(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert balancer.main(["--workers", "2", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err
        == f"serve: cannot listen on 127.0.0.1:{port} (Address already in use): pick another --port or --address\n"
    )


def test_haproxy_sets_the_client_address_itself_and_terminates_tls_with_one_private_pem(tmp_path):
    text = haproxy.haproxy_config("0.0.0.0", 8501, [40001])
    assert text.index("http-request del-header X-Forwarded-For") < text.index(
        "option forwardfor"
    )  # no forged chain
    assert "X-Forwarded-Proto http if !{ ssl_fc }" in text and " ssl crt " not in text
    (tmp_path / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n")
    pem = haproxy.write_tls_pem(tmp_path / "cert.pem", tmp_path / "key.pem")
    try:
        assert (
            (pem.stat().st_mode & 0o777) == 0o600
            and "CERTIFICATE" in pem.read_text()
            and "KEY" in pem.read_text()
        )
        tls = haproxy.haproxy_config("0.0.0.0", 8443, [40001], pem)
        assert f"bind 0.0.0.0:8443 ssl crt {pem}" in tls and "httponly secure" in tls
    finally:
        pem.unlink()
    with pytest.raises(ValueError, match="PEM private key"):
        haproxy.write_tls_pem(tmp_path / "cert.pem", tmp_path / "cert.pem")


def test_a_certificate_without_its_key_is_one_line_and_exit_2(tmp_path, capsys):
    assert balancer.main(["--workers", "1", "--tls-cert", str(tmp_path / "cert.pem")]) == 2
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err == "serve: --tls-cert and --tls-key go together (the certificate and its private key)\n"
    )


def test_the_outer_balancer_config_is_sticky_by_machine_and_valid(tmp_path, capsys):
    assert balancer.main(["--print-outer-config", "10.0.0.11:8501", "10.0.0.12:8501", "--port", "8080"]) == 0
    text = capsys.readouterr().out
    assert (
        "bind 127.0.0.1:8080" in text and f"cookie {haproxy.MACHINE_COOKIE} insert indirect nocache" in text
    )
    assert (
        "server m0 10.0.0.11:8501 cookie m0 check" in text
        and "server m1 10.0.0.12:8501 cookie m1 check" in text
    )
    assert f"uri {haproxy.HEALTH_PATH}" in text and f"set-header {haproxy.MACHINE_HEADER} %[srv_name]" in text
    assert (
        "http-request del-header X-Forwarded-For  #" in text
    )  # it faces the network: no client's claim kept
    with pytest.raises(SystemExit):
        balancer.main(["--print-outer-config", "10.0.0.11"])
    assert "a machine is HOST:PORT" in capsys.readouterr().err
    binary = haproxy.haproxy_binary()
    if binary is None:
        pytest.skip(haproxy.INSTALL_HINT)
    (tmp_path / "outer.cfg").write_text(text)
    check = subprocess.run([binary, "-c", "-f", str(tmp_path / "outer.cfg")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_machine_keeps_the_client_address_only_from_the_balancer_in_front():
    text = haproxy.haproxy_config("0.0.0.0", 8501, [40001], trusted=("10.0.0.5",))
    assert "http-request del-header X-Forwarded-For if !{ src 10.0.0.5 }" in text
    assert "option forwardfor if-none" in text  # the address it saw, where the balancer gave none
    assert (
        "X-Forwarded-Proto http if !{ ssl_fc } !{ src 10.0.0.5 }" in text
    )  # the browser's scheme, from in front
