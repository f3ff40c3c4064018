"""A PostgreSQL server of Debian's `postgresql` package, started in a temporary folder for tests and benchmarks.

`running_postgresql()` runs `initdb` and `pg_ctl start` as an unprivileged user (PostgreSQL refuses to run as
root: as root, `runuser -u nobody`), listening on 127.0.0.1 on a free port with trust authentication, and stops it
and removes the folder after. `fresh_schema(url)` gives a test a store of its own on that server: a new schema,
named in the URL's search_path, so one server serves a whole test session.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from devtools.server import free_port

USER = "bertviz"  # the server's superuser, made by initdb
UNPRIVILEGED = "nobody"  # who runs the server when the tests run as root


def postgresql_bin() -> Path:
    """The folder of initdb and pg_ctl: on the PATH, or Debian's /usr/lib/postgresql/<newest>/bin."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise FileNotFoundError(
            "PostgreSQL's initdb was not found: install Debian's postgresql (apt-get install postgresql; "
            ".ci/run does) to run the tests on the shared store."
        )
    return Path(found[-1]).parent


def _as_server_user(folder: Path) -> list[str]:
    if os.geteuid() != 0:
        return []
    shutil.chown(folder, UNPRIVILEGED)
    return ["runuser", "-u", UNPRIVILEGED, "--"]


@contextlib.contextmanager
def running_postgresql(*, durable: bool = True) -> Iterator[str]:
    """A fresh server for the duration of the block; yields its URL (postgresql://bertviz@127.0.0.1:PORT/postgres).

    `durable=False` turns fsync off (tests: the claims are about killed app processes, not power cuts)."""
    folder = Path(tempfile.mkdtemp(prefix="bertviz-lite-postgresql-"))
    as_user = _as_server_user(folder)
    binaries = postgresql_bin()
    port = free_port()
    data = folder / "data"
    run = {"check": True, "capture_output": True, "cwd": folder}
    try:
        subprocess.run(
            [
                *as_user,
                binaries / "initdb",
                "-D",
                data,
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            **run,
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        options += "" if durable else " -c fsync=off -c full_page_writes=off"
        subprocess.run(
            [
                *as_user,
                binaries / "pg_ctl",
                "-D",
                data,
                "-l",
                folder / "server.log",
                "-w",
                "-o",
                options,
                "start",
            ],
            **run,
        )
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_user, binaries / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], **run
            )
        shutil.rmtree(folder, ignore_errors=True)


def fresh_schema(url: str) -> str:
    """A new, empty schema on the server at `url`; returns the URL whose connections use it (search_path)."""
    import psycopg

    name = f"test_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {name}")
    return f"{url}?options=-csearch_path%3D{name}"
