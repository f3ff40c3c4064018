"""`python -m bertviz_lite.serve --workers N`: N `streamlit run app.py` processes behind HAProxy, sticky sessions.

One Streamlit process runs every visitor's script in one Python interpreter; a lecture hall clicking together
queues behind it. This starts N app processes ("workers") on free loopback ports, writes an HAProxy
configuration (server/haproxy.py) into a run folder and runs haproxy in front of them on --address:--port.
It says "open http://…" only once every worker answers its health check and haproxy answers too.

The workers share what must be shared through the disk: checkpoints/ (run folders, owner.json, the launch
and upload locks) and the store of server/database.py (the admin token's wrong tries, the live classes: this
machine's SQLite file, or the PostgreSQL server that several machines share). Several machines each run serve behind
one outer balancer: `--print-outer-config HOST:PORT …` prints its haproxy.cfg, and `--trust-forwarded-from` keeps the
client address it forwards. A visitor's id
is a cookie the browser sends to every worker. Each worker gets its index in BERTVIZ_LITE_WORKER and the same
Streamlit cookie secret, so a browser's XSRF cookie holds on every worker.

Ctrl-C or SIGTERM stops haproxy, then every worker (SIGTERM, then SIGKILL after STOP_GRACE_S), and waits for
each: no orphans, no zombies; the workers and haproxy also get SIGTERM from the kernel if this process dies.
A worker that exits on its own is started again on its port (at most MAX_RESTARTS times); if haproxy exits,
the rest are stopped and the command exits 1.
`--workers 1` still runs the balancer (one cookie, the same health checks); a plain `streamlit run app.py`
is the embedded default and needs none of this.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bertviz_lite.loading.run_folder import REPO_ROOT
from bertviz_lite.server import haproxy

WORKER_SETTING = "BERTVIZ_LITE_WORKER"  # each worker's index, 0 … N-1
COOKIE_SECRET_SETTING = "STREAMLIT_SERVER_COOKIE_SECRET"  # Streamlit's own setting, read from the environment
MAX_WORKERS = 16
DEFAULT_PORT = 8501
START_TIMEOUT_S = 180.0  # N workers importing torch and Streamlit at once on 2 cores take a while
WARM_UP_TIMEOUT_S = (
    120.0  # one script run per worker, the default model loaded and traced: seconds, all at once
)
STOP_GRACE_S = 10.0
MAX_RESTARTS = 5  # a worker that keeps dying (a broken install) ends serve instead of looping
_PR_SET_PDEATHSIG = 1


class ServeError(RuntimeError):
    """Something the person starting the server must hear in one line (exit 1)."""


class _Stop(Exception):
    """SIGINT (Ctrl-C) or SIGTERM arrived."""


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # a CLI error is one line and exit 2, without the usage block
        self.exit(2, f"serve: error: {message}\n")


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a whole number from 1 to {MAX_WORKERS} is needed, not {text!r}"
        ) from None
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"from 1 to {MAX_WORKERS} workers, not {value}")
    return value


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port number from 1 to 65535 is needed, not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="python -m bertviz_lite.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=_workers, help="app processes behind the balancer (required)")
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help="the port visitors open (default 8501)"
    )
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="the address haproxy listens on (0.0.0.0: every interface; default 127.0.0.1)",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        default=None,
        help="a PEM certificate: haproxy serves HTTPS with it (use it on a lecture hall's Wi-Fi)",
    )
    parser.add_argument("--tls-key", type=Path, default=None, help="the certificate's PEM private key")
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help="folder for haproxy.cfg and the logs (default: a new temporary folder, removed at exit)",
    )
    parser.add_argument(
        "--trust-forwarded-from",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="the address of a balancer in front of several machines: its X-Forwarded-For is kept (repeatable)",
    )
    parser.add_argument(
        "--print-outer-config",
        nargs="+",
        type=_machine,
        default=None,
        metavar="HOST:PORT",
        help="print the haproxy.cfg of a balancer on --address:--port in front of machines each running serve "
        "at HOST:PORT, sticky by a machine cookie, and exit",
    )
    return parser


def _machine(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"a machine is HOST:PORT (say 10.0.0.11:8501), not {text!r}")
    return text


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def worker_command(port: int) -> list[str]:
    """The same `streamlit run app.py` as a plain run (.streamlit/config.toml applies), on a loopback port."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--server.scriptHealthCheckEnabled",
        "true",
    ]  # serve's warm-up runs app.py once (denied through haproxy)


def _child_setup() -> None:
    """In the child before exec: its own process group (a terminal's Ctrl-C reaches serve alone, which stops haproxy
    first and then the workers), and SIGTERM from the kernel when this serve process dies (Linux)."""
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: Ctrl-C and SIGTERM still stop everything


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "ab") as handle:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            preexec_fn=_child_setup,
        )


@dataclass
class Worker:
    """One app process: its index, loopback port, environment and log; `start` (re)starts it."""

    index: int
    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None
    restarts: int = 0

    @property
    def name(self) -> str:
        return f"worker {self.index}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{haproxy.HEALTH_PATH}"

    def warm_up(self) -> bool:
        """Run app.py once in a bare session (imports, the default model and pair's trace): the first visitor's
        page is then as quick as the next one's. Whether the script ran without an error."""
        return answers_ok(f"http://127.0.0.1:{self.port}{haproxy.WARM_UP_PATH}", timeout=WARM_UP_TIMEOUT_S)

    def start(self) -> subprocess.Popen:
        self.process = _start(worker_command(self.port), self.log, self.env)
        return self.process


def plan_workers(count: int, run_dir: Path) -> list[Worker]:
    """`count` workers on free loopback ports, each logging to run_dir/worker-<i>.log (not started yet)."""
    # One Streamlit cookie secret for all, so any worker accepts a browser's cookies; several machines behind one
    # balancer are given the same one in STREAMLIT_SERVER_COOKIE_SECRET.
    secret = os.environ.get(COOKIE_SECRET_SETTING, "").strip() or secrets.token_urlsafe(32)
    return [
        Worker(
            index,
            free_port(),
            {
                **os.environ,
                WORKER_SETTING: str(index),
                "PYTHONUNBUFFERED": "1",
                COOKIE_SECRET_SETTING: secret,
            },
            run_dir / f"worker-{index}.log",
        )
        for index in range(count)
    ]


def answers_ok(url: str, timeout: float = 2.0) -> bool:
    """Whether `url` answers 200 "ok" within `timeout` seconds (our own haproxy's certificate is not checked)."""
    unchecked = ssl._create_unverified_context() if url.startswith("https:") else None  # noqa: S323 - our own proxy
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=unchecked) as response:  # noqa: S310 - ours
            return response.status == 200 and response.read().strip() == b"ok"
    except OSError:
        return False


def wait_healthy(urls: dict[str, str], processes: dict[str, subprocess.Popen], timeout: float) -> None:
    """Poll every health URL until each answers ok; ServeError when a process exits or time runs out."""
    deadline = time.monotonic() + timeout
    waiting = dict(urls)
    while waiting:
        for name, process in processes.items():
            if process.poll() is not None:
                raise ServeError(f"{name} exited with code {process.returncode} while starting")
        waiting = {name: url for name, url in waiting.items() if not answers_ok(url)}
        if waiting and time.monotonic() > deadline:
            raise ServeError(
                f"{', '.join(waiting)} did not answer {haproxy.HEALTH_PATH} within {timeout:.0f} s"
            )
        if waiting:
            time.sleep(0.25)


def warm_up(workers: list[Worker]) -> None:
    """Every worker runs app.py once, all at the same time; a worker whose run fails is said, and still serves."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        warmed = list(pool.map(Worker.warm_up, workers))
    for worker, ok in zip(workers, warmed, strict=True):
        if not ok:
            print(
                f"{worker.name}: its warm-up run did not finish cleanly (see its log); it serves anyway",
                flush=True,
            )
    print(
        f"{sum(warmed)} of {len(workers)} workers warmed up in {time.monotonic() - started:.1f} s", flush=True
    )


def stop_all(processes: list[subprocess.Popen], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to each live process, SIGKILL to those still alive after grace_s, and wait for every one."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _raise_stop(signum, frame) -> None:
    raise _Stop


def serve(args: argparse.Namespace, binary: str) -> int:
    """Start, announce, supervise, stop; the exit code."""
    temporary = args.run_dir is None
    run_dir = Path(tempfile.mkdtemp(prefix="bertviz-lite-serve-")) if temporary else args.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    for signum in (
        signal.SIGINT,
        signal.SIGTERM,
    ):  # SIGINT too, even where a shell started us with it ignored
        signal.signal(signum, _raise_stop)
    processes: dict[str, subprocess.Popen] = {}
    code = 0
    try:
        print(
            f"Starting {args.workers} app worker{'s' if args.workers > 1 else ''} (logs in {run_dir})…",
            flush=True,
        )
        workers = plan_workers(args.workers, run_dir)
        processes.update({worker.name: worker.start() for worker in workers})
        wait_healthy({worker.name: worker.health_url for worker in workers}, processes, START_TIMEOUT_S)
        warm_up(workers)
        tls_pem = _tls_pem(args)
        ports = [worker.port for worker in workers]
        trusted = tuple(args.trust_forwarded_from)
        config = haproxy.write_config(run_dir, args.address, args.port, ports, tls_pem, trusted)
        processes["haproxy"] = _start(
            haproxy.haproxy_command(binary, config), run_dir / "haproxy.log", dict(os.environ)
        )
        shown = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
        scheme = "https" if tls_pem else "http"
        wait_healthy({"haproxy": f"{scheme}://{shown}:{args.port}{haproxy.HEALTH_PATH}"}, processes, 30.0)
        workers_text = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
        print(
            f"open {scheme}://{shown}:{args.port} ({workers_text} behind haproxy, sticky sessions; Ctrl-C stops them "
            "all)",
            flush=True,
        )
        supervise(workers, processes)
    except (KeyboardInterrupt, _Stop):
        print("Stopping haproxy and the workers…", flush=True)
    except ServeError as err:
        log = _log_of(err, run_dir)
        print(f"serve: {err}{_last_line(log)}; see {log}", file=sys.stderr, flush=True)
        code = 1  # keep the logs of a failure
        temporary = False
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave workers behind
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_all([processes.pop("haproxy")] if "haproxy" in processes else [])
        stop_all(list(processes.values()))
        for pem in _TLS_FILES:
            pem.unlink(missing_ok=True)  # the private key's copy goes with haproxy
        if temporary:
            _remove(run_dir)
    return code


_TLS_FILES: list[Path] = []


def _tls_pem(args: argparse.Namespace) -> Path | None:
    """haproxy's one PEM file from --tls-cert and --tls-key (None without them); removed when serve stops."""
    if args.tls_cert is None:
        return None
    try:
        _TLS_FILES.append(haproxy.write_tls_pem(args.tls_cert, args.tls_key))
    except ValueError as err:
        raise ServeError(f"haproxy: {err}") from None
    return _TLS_FILES[-1]


def supervise(workers: list[Worker], processes: dict[str, subprocess.Popen]) -> None:
    """Until a signal: a worker that exits is started again on its port (haproxy's health check takes it back in;
    its visitors meanwhile start new sessions on the others), up to MAX_RESTARTS times; haproxy exiting ends it all."""
    while True:
        name = _first_to_exit(processes)
        worker = next((w for w in workers if w.name == name), None)
        if worker is None or worker.restarts >= MAX_RESTARTS:
            raise ServeError(f"{name} exited with code {processes[name].returncode}")
        worker.restarts += 1
        print(
            f"{name} exited with code {processes[name].returncode}: starting it again "
            f"({worker.restarts} of {MAX_RESTARTS} restarts)",
            flush=True,
        )
        processes[name] = worker.start()


def _first_to_exit(processes: dict[str, subprocess.Popen]) -> str:
    """Block until one of the processes exits (without reaping it, so its Popen still reads its code)."""
    while True:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        name = next(
            (name for name, process in processes.items() if info is not None and info.si_pid == process.pid),
            None,
        )
        if name is not None:
            processes[name].wait()
            return name
        if info is not None:
            os.waitpid(
                info.si_pid, 0
            )  # not one of ours to watch (a replaced worker's leftover): reap it, go on


def _log_of(err: ServeError, run_dir: Path) -> Path:
    text = str(err)
    if text.startswith("worker "):
        return run_dir / f"worker-{text.split()[1].rstrip(',')}.log"
    return run_dir / "haproxy.log" if text.startswith("haproxy") else run_dir


def _last_line(log: Path) -> str:
    """ ": <the log's last line>" (haproxy's "cannot bind socket", a worker's last error), or ""."""
    try:
        lines = [
            line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
    except OSError:
        return ""
    return f": {lines[-1].strip()[:300]}" if lines else ""


def _remove(run_dir: Path) -> None:
    for path in run_dir.iterdir():
        path.unlink(missing_ok=True)
    run_dir.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workers is None and not args.print_outer_config:
        parser.error("the following arguments are required: --workers")
    if (args.tls_cert is None) != (args.tls_key is None):
        print(
            "serve: --tls-cert and --tls-key go together (the certificate and its private key)",
            file=sys.stderr,
        )
        return 2
    if args.print_outer_config:
        pem = (
            Path("/etc/haproxy/bertviz-lite.pem") if args.tls_cert else None
        )  # where to put cert + key in one
        print(haproxy.outer_config(args.address, args.port, args.print_outer_config, pem), end="")
        return 0
    binary = haproxy.haproxy_binary()
    if binary is None:
        print(f"serve: {haproxy.INSTALL_HINT}", file=sys.stderr)
        return 2
    problem = _cannot_listen(args.address, args.port)
    if problem:
        print(
            f"serve: cannot listen on {args.address}:{args.port} ({problem}): pick another --port or --address",
            file=sys.stderr,
        )
        return 2
    return serve(args, binary)


def _cannot_listen(address: str, port: int) -> str:
    """Why haproxy could not listen there ("Address already in use", a bad address), or "" when it can."""
    try:
        family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family) as sock:
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
            )  # as haproxy does: TIME_WAIT is no obstacle
            sock.bind((address, port))
    except OSError as err:
        return err.strerror or str(err)
    return ""
