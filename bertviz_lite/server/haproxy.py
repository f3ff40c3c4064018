"""The HAProxy configuration in front of N app workers: sticky sessions, websocket timeouts, health checks.

A visitor's first answer carries a cookie (COOKIE) naming the worker that served it; every later request of
that browser, the websocket /_stcore/stream included, goes to the same worker, because a Streamlit session
lives in one process's memory. Each answer also says which worker sent it (WORKER_HEADER): harmless, and it
lets a test or a lecturer see where a browser landed. haproxy sets X-Forwarded-For to the client's address (any
such header the client sent is dropped first) and X-Forwarded-Proto to the scheme the browser used; Streamlit's
uvicorn believes both because they come from 127.0.0.1, so the per-address limits see the real client and the
cookie route marks cookies Secure over HTTPS. With a certificate (`tls_pem`: certificate and key in one PEM file)
haproxy terminates TLS itself. Written for Debian's haproxy 2.6.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

HAPROXY_SETTING = (
    "BERTVIZ_LITE_HAPROXY"  # the haproxy binary to run (default: the one on PATH or in /usr/sbin)
)
COOKIE = "bvl_worker"
WORKER_HEADER = "X-Bertviz-Lite-Worker"
HEALTH_PATH = "/_stcore/health"  # Streamlit answers "ok" once its runtime is up
WARM_UP_PATH = (
    "/_stcore/script-health-check"  # runs app.py once in a bare session: serve warms each worker with it
)
INSTALL_HINT = (
    "haproxy is not installed (or BERTVIZ_LITE_HAPROXY names no program): "
    "apt-get install -y haproxy (Debian/Ubuntu), then run this again"
)
# A websocket stays open for a whole lecture: only a tunnel silent for this long is closed.
TUNNEL_TIMEOUT = "2h"


def haproxy_binary(environ: Mapping[str, str] = os.environ) -> str | None:
    """BERTVIZ_LITE_HAPROXY if set, else the haproxy on PATH (or in /usr/sbin, which a plain user's PATH may
    lack); None when there is none to run."""
    if environ.get(HAPROXY_SETTING, "").strip():
        return shutil.which(environ[HAPROXY_SETTING].strip())
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")


def server_name(index: int) -> str:
    """The name of worker `index` in the config, the cookie and the worker header: w0, w1, …"""
    return f"w{index}"


def haproxy_config(address: str, port: int, worker_ports: list[int], tls_pem: Path | None = None) -> str:
    """The whole configuration: one frontend on address:port (HTTPS with `tls_pem`), one backend with a server per
    worker port."""
    servers = "\n".join(
        f"    server {server_name(i)} 127.0.0.1:{p} cookie {server_name(i)} check inter 2s fall 3 rise 2"
        for i, p in enumerate(worker_ports)
    )
    bind = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    bind += f" ssl crt {tls_pem}" if tls_pem else ""
    secure = " secure" if tls_pem else ""
    return f"""# Written by `python -m bertviz_lite.serve`; a new one each start.
global
    log stdout format raw local0 info
    maxconn 4096

defaults
    mode http
    log global
    option httplog
    option redispatch          # a worker that is down: its visitors go to another (their session starts anew)
    retries 2
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-request 15s
    timeout tunnel {TUNNEL_TIMEOUT}
    timeout client-fin 10s

frontend app
    bind {bind}
    http-request deny if {{ path_beg {WARM_UP_PATH} }}  # a full script run on request: for serve's warm-up only
    http-request del-header X-Forwarded-For  # the client's own claim; option forwardfor adds the real address
    option forwardfor
    http-request set-header X-Forwarded-Proto https if {{ ssl_fc }}
    http-request set-header X-Forwarded-Proto http if !{{ ssl_fc }}
    default_backend workers

backend workers
    balance leastconn          # websockets are long: a new visitor goes to the worker with the fewest
    cookie {COOKIE} insert indirect nocache httponly{secure} attr SameSite=Lax
    option httpchk
    http-check send meth GET uri {HEALTH_PATH}
    http-check expect string ok
    http-response set-header {WORKER_HEADER} %[srv_name]
{servers}
"""


def write_config(
    folder: Path, address: str, port: int, worker_ports: list[int], tls_pem: Path | None = None
) -> Path:
    """Write haproxy.cfg into `folder` (the serve command's run folder) and return its path."""
    path = folder / "haproxy.cfg"
    path.write_text(haproxy_config(address, port, worker_ports, tls_pem), encoding="utf-8")
    return path


def write_tls_pem(cert: Path, key: Path) -> Path:
    """The certificate and its key concatenated into one private file (0600, in the system's temporary folder), as
    haproxy's `ssl crt` wants them; the caller removes it when haproxy stops. ValueError in words."""
    try:
        parts = [Path(cert).read_text(encoding="ascii"), Path(key).read_text(encoding="ascii")]
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read the TLS certificate or key: {err}") from None
    if "-----BEGIN" not in parts[0] or "PRIVATE KEY-----" not in parts[1]:
        raise ValueError("--tls-cert needs a PEM certificate and --tls-key its PEM private key")
    handle, name = tempfile.mkstemp(
        prefix="bertviz-lite-tls-", suffix=".pem"
    )  # mode 0600: only this user reads it
    with os.fdopen(handle, "w", encoding="ascii") as out:
        out.write("\n".join(part.strip() for part in parts) + "\n")
    return Path(name)


def haproxy_command(binary: str, config: Path) -> list[str]:
    """haproxy in the foreground (-db), so that the serve command owns it and stops it."""
    return [binary, "-db", "-f", str(config)]
