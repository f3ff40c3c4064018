"""The HAProxy configurations: in front of N app workers (sticky sessions, websocket timeouts, health checks), and
the outer balancer in front of several machines (`outer_config`).

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
MACHINE_COOKIE = "bvl_machine"  # the outer balancer's, in front of several machines
MACHINE_HEADER = "X-Bertviz-Lite-Machine"
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


def machine_name(index: int) -> str:
    """The name of machine `index` in the outer balancer's config, its cookie and header: m0, m1, …"""
    return f"m{index}"


def haproxy_config(
    address: str,
    port: int,
    worker_ports: list[int],
    tls_pem: Path | None = None,
    trusted: tuple[str, ...] = (),
) -> str:
    """The whole configuration: one frontend on address:port (HTTPS with `tls_pem`), one backend with a server per
    worker port. `trusted`: the addresses of an outer balancer whose X-Forwarded-For and -Proto are kept."""
    servers = "\n".join(
        f"    server {server_name(i)} 127.0.0.1:{p} cookie {server_name(i)} check inter 2s fall 3 rise 2"
        for i, p in enumerate(worker_ports)
    )
    # A full script run on request: for serve's warm-up only.
    warm_up_denied = f"    http-request deny if {{ path_beg {WARM_UP_PATH} }}\n"
    return f"""# Written by `python -m bertviz_lite.serve`; a new one each start.
{_GLOBAL}

{_frontend(address, port, tls_pem, trusted, warm_up_denied, "workers")}

backend workers
    balance leastconn          # websockets are long: a new visitor goes to the worker with the fewest
{_sticky(COOKIE, tls_pem, WORKER_HEADER)}
{servers}
"""


def outer_config(
    address: str, port: int, machines: list[str], tls_pem: Path | None = None, trusted: tuple[str, ...] = ()
) -> str:
    """The balancer in front of several machines, each running `serve` at one of `machines` ("host:port"): sticky
    by MACHINE_COOKIE (each machine's own haproxy keeps a browser on one worker with COOKIE), health-checked through
    each machine's haproxy, the client's address passed on in X-Forwarded-For (start each machine's serve with
    `--trust-forwarded-from` this balancer's address). `trusted`: a load generator whose claimed addresses are kept
    (bench/live_class.py); never on a balancer that faces the network."""
    servers = "\n".join(
        f"    server {machine_name(i)} {where} cookie {machine_name(i)} check inter 2s fall 3 rise 2"
        for i, where in enumerate(machines)
    )
    return f"""# Written by `python -m bertviz_lite.serve --print-outer-config`: the balancer in front of the machines.
{_GLOBAL}

{_frontend(address, port, tls_pem, trusted, "", "machines")}

backend machines
    balance leastconn
{_sticky(MACHINE_COOKIE, tls_pem, MACHINE_HEADER)}
{servers}
"""


_GLOBAL = f"""global
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
    timeout client-fin 10s"""


def _frontend(
    address: str, port: int, tls_pem: Path | None, trusted: tuple[str, ...], rules: str, backend: str
) -> str:
    """The frontend: the client's own X-Forwarded-For dropped (kept from a `trusted` balancer in front, which set
    it), the real address added, and the scheme the browser used in X-Forwarded-Proto; then `rules`."""
    bind = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    bind += f" ssl crt {tls_pem}" if tls_pem else ""
    not_trusted = f" !{{ src {' '.join(trusted)} }}" if trusted else ""
    return f"""frontend app
    bind {bind}
    http-request del-header X-Forwarded-For{" if" + not_trusted if trusted else ""}  # the client's own claim
    option forwardfor if-none  # the address haproxy saw, where no trusted balancer in front gave one
    http-request set-header X-Forwarded-Proto https if {{ ssl_fc }}
    http-request set-header X-Forwarded-Proto http if !{{ ssl_fc }}{not_trusted}
{rules}    default_backend {backend}"""


def _sticky(cookie: str, tls_pem: Path | None, header: str) -> str:
    """A backend's cookie, health check on HEALTH_PATH and the header naming the server that answered."""
    secure = " secure" if tls_pem else ""
    return f"""    cookie {cookie} insert indirect nocache httponly{secure} attr SameSite=Lax
    option httpchk
    http-check send meth GET uri {HEALTH_PATH}
    http-check expect string ok
    http-response set-header {header} %[srv_name]"""


def write_config(
    folder: Path,
    address: str,
    port: int,
    worker_ports: list[int],
    tls_pem: Path | None = None,
    trusted: tuple[str, ...] = (),
) -> Path:
    """Write haproxy.cfg into `folder` (the serve command's run folder) and return its path."""
    path = folder / "haproxy.cfg"
    path.write_text(haproxy_config(address, port, worker_ports, tls_pem, trusted), encoding="utf-8")
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
