"""Several app machines simulated on this one: each a `python -m bertviz_lite.serve` with its own port, worker
processes and data/ folder, all sharing one PostgreSQL server and this repository's checkpoints/, behind one outer
haproxy sticky by a machine cookie (the config `serve --print-outer-config` prints).

Used by bench/live_class.py --machines N and tests/browser/test_machines_browser.py. Both "machines" share this
machine's cores, so what they measure is the software's overhead, not the capacity of real separate hosts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bertviz_lite.server import database, haproxy
from bertviz_lite.server.balancer import COOKIE_SECRET_SETTING, answers_ok
from devtools.postgresql import running_postgresql
from devtools.server import REPO, free_port, serve_command
from devtools.waiting import wait_until

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 300.0  # every machine's workers import torch and warm up at once on 2 cores


@dataclass
class Machine:
    """One simulated machine: its serve process (haproxy and workers below it), port and own folders."""

    index: int
    port: int
    folder: Path
    serve: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return haproxy.machine_name(self.index)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, workers: int, environ: dict[str, str]) -> None:
        command = serve_command(workers, self.port, self.folder / "serve", "--trust-forwarded-from", LOOPBACK)
        env = {**environ, database.DATA_DIR_SETTING: str(self.folder / "data")}
        with open(self.folder / "serve.out", "ab") as out:
            self.serve = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

    def processes(self) -> list[int]:
        """serve's pid and those of its haproxy and workers."""
        return [self.serve.pid, *_children_of(self.serve.pid)]

    def die(self) -> None:
        """The machine dies: SIGKILL to serve, its haproxy and its workers at once (nothing is stopped in order)."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.serve.wait()

    def stop(self) -> None:
        if self.serve is not None and self.serve.poll() is None:
            self.serve.terminate()
            try:
                self.serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.die()


@dataclass
class Machines:
    """The outer balancer's URL (one machine's own, when there is one), the machines, the shared database's URL ("":
    each machine's SQLite file)."""

    url: str
    database_url: str
    machines: list[Machine] = field(default_factory=list)


def _children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@contextlib.contextmanager
def running_machines(
    count: int = 2,
    workers: int = 1,
    *,
    trust_clients: bool = False,
    database_url: str | None = None,
    logs: Path | None = None,
    postgresql: bool = True,
) -> Iterator[Machines]:
    """`count` machines of `workers` app processes each, behind an outer haproxy when there are several; a PostgreSQL
    server of their own unless `database_url` names one (`postgresql=False`: each machine's SQLite file, for one
    machine as deployed without a database server). `trust_clients`: the outer balancer keeps the X-Forwarded-For its clients send
    (a load generator playing many phones); never on a balancer that faces the network. `logs`: a folder that keeps
    every machine's logs and data/ afterwards (else a temporary one)."""
    binary = haproxy.haproxy_binary()
    if binary is None:
        raise RuntimeError(haproxy.INSTALL_HINT)
    with contextlib.ExitStack() as stack:
        url = database_url or stack.enter_context(running_postgresql())
        folder = logs or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="bertviz-lite-machines-"))
        )
        environ = {
            **os.environ,
            database.DATABASE_URL_SETTING: url,
            COOKIE_SECRET_SETTING: secrets.token_urlsafe(32),
        }
        cluster = Machines("", url, [Machine(i, free_port(), folder / f"machine-{i}") for i in range(count)])
        stack.callback(lambda: [machine.stop() for machine in cluster.machines])
        for machine in cluster.machines:
            (machine.folder / "data").mkdir(parents=True, exist_ok=True)
            machine.start(workers, environ)
        for machine in cluster.machines:
            _wait_open(machine)
        cluster.url = (
            stack.enter_context(_outer(binary, folder, cluster.machines, trust_clients))
            if count > 1
            else cluster.machines[0].url
        )
        yield cluster


def _wait_open(machine: Machine) -> None:
    def opened() -> bool:
        if machine.serve.poll() is not None:
            log = (machine.folder / "serve.out").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"machine {machine.name}'s serve exited: {log}")
        return "open http" in (machine.folder / "serve.out").read_text(errors="replace")

    wait_until(opened, START_TIMEOUT_S, f"machine {machine.name} to open", every=0.5)


@contextlib.contextmanager
def _outer(binary: str, folder: Path, machines: list[Machine], trust_clients: bool) -> Iterator[str]:
    port = free_port()
    trusted = (LOOPBACK,) if trust_clients else ()
    where = [f"{LOOPBACK}:{machine.port}" for machine in machines]
    config = folder / "outer.cfg"
    config.write_text(haproxy.outer_config(LOOPBACK, port, where, trusted=trusted), encoding="utf-8")
    with open(folder / "outer.log", "ab") as log:
        process = subprocess.Popen(
            haproxy.haproxy_command(binary, config), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://{LOOPBACK}:{port}"
        wait_until(lambda: answers_ok(f"{url}{haproxy.HEALTH_PATH}"), 30, "the outer balancer", every=0.25)
        yield url
    finally:
        process.terminate()
        process.wait()
