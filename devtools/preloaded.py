"""Run `python bench/X.py --smoke` (or any `python …` command line) as a child forked from one interpreter that has
already imported the heavy third-party modules the scripts share (torch, transformers, streamlit, plotly, pandas,
playwright).

A cold interpreter spends 1.5-5 s of CPU importing them before a smoke run's own second of work; 26 scripts paid that
26 times (tests/bench/test_bench_smoke.py). Here the test starts this file once (`python devtools/preloaded.py`),
which imports them and then, per request, forks a child that runs the script as a fresh `python bench/X.py --smoke`
would: the script as `__main__`, its argv, its folder first on sys.path (this folder is not on it), the repository as
its working directory, its own stdout and stderr, an empty stdin. Nothing of the project is imported before the fork,
so each script still finds and imports bertviz_lite, bench/ and tests/ itself; what the fork takes away is only the
cold import of the third-party modules listed in PRELOAD. The Python processes a script starts (the app's server, a
training run, train_throughput's case, the checker's worker) are forked from the script in the same way when the test
asks (fork_python_children): Popen sets up their files, folder and session as before, and each runs its own command
line with the project's modules imported anew, instead of a fresh interpreter importing torch and streamlit again
(2-4 s of CPU each). Other programs (chromium, py-spy) start as before.

The training tests fork their `python -m bertviz_lite.train` runs from it too (tests/training/conftest.py's
`preloaded_python`, with the modules to import named on this file's command line), and torchrun with its workers.

Protocol, JSON lines: the test writes {"script", "stdout", "stderr", "fork_children"} (or {"argv", "cwd", "env",
"stdout", "stderr", "fork_children"} for a command line); this process answers {"pid"} at
the fork, then {"returncode"} (negative: the signal that ended it, as subprocess reports it) when the child has ended.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import random
import runpy
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRELOAD = (
    "numpy",
    "pandas",
    "torch",
    "transformers.models.bert.modeling_bert",  # with torch._dynamo, sympy and scipy: 3 s of CPU cold
    "safetensors.torch",
    "streamlit",
    "plotly.graph_objects",
    "playwright.sync_api",
    "websockets",
)


def preload(modules: tuple[str, ...] = PRELOAD) -> None:
    """Import `modules` (PRELOAD by default); a module that is not installed is left to the script to miss, as it
    would cold.

    Then gc.freeze(): the children's garbage collections, their exit's included, leave the preloaded objects alone
    instead of touching, and so copying, every page of them (a child's exit cost 1.3 s of CPU without it).
    """
    for name in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.freeze()


def run_script(request: dict) -> None:
    """In the forked child: become `python bench/X.py --smoke` (_run_python: exceptions and SystemExit give the exit
    code they would give that interpreter); with request["fork_children"], the Python processes it starts are forked
    from it too. Never returns.

    It ends as _run_python's commands do, by os._exit after the script's threads, atexit handlers and streams: an
    interpreter's teardown would touch, and so copy, every page of the preloaded modules (0.33 CPU-s a script)."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        os.dup2(os.open(path, flags), fd)
    os.chdir(REPO)
    if request.get("fork_children"):
        fork_python_children()
    # Its folder first on sys.path, as `python bench/X.py` puts it.
    os._exit(_run_python([request["script"], "--smoke"]))


def run_command(request: dict) -> None:
    """In the forked child: become `python *request["argv"]` in request["cwd"] with request["env"] as its environment,
    its stdout and stderr to their files, stdin empty (with request["fork_children"], the Python processes it starts
    are forked from it: torchrun's workers); never returns."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        os.dup2(os.open(path, flags), fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request.get("fork_children"):
        fork_python_children()
    random.seed()  # from os.urandom, as a fresh interpreter's: a fork would share its parent's state
    os._exit(_run_python(request["argv"]))


# A Python child's path after its first entry and PYTHONPATH: this interpreter's, but its own folder.
BASE_PATH = sys.path[1:]


def fork_python_children() -> None:
    """Run the `python -m …`, `python -c …` and `python file …` commands the script starts in a fork of it, not a
    fresh interpreter: subprocess.Popen's child setup (pipes and files on 0-2, other descriptors closed, cwd, new
    session, preexec_fn) runs as before, then the command runs as that interpreter would run it, instead of exec.

    The app's server, a training run and a timed case then skip the cold import of torch and streamlit (2-4 s of CPU
    each). Other programs (chromium, py-spy) and Python commands with other options start as before.
    """
    exec_child = subprocess._fork_exec

    def fork_exec(args, executables, close_fds, keep, cwd, env_list, *pipes_and_rest):
        command = [os.fsdecode(arg) for arg in args]
        if not _runs_here(command, os.fsdecode(executables[0])):
            return exec_child(args, executables, close_fds, keep, cwd, env_list, *pipes_and_rest)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing the script wrote is written again by the fork
        pid = os.fork()
        if pid == 0:
            _become(command, close_fds, keep, cwd, env_list, *pipes_and_rest)
        return pid

    subprocess._fork_exec = fork_exec
    subprocess._USE_POSIX_SPAWN = False  # every child through _fork_exec


def _runs_here(command: list[str], executable: str) -> bool:
    """A command this interpreter can run itself: sys.executable, then -m module, -c code or a file (after -u, as
    torchrun starts its workers)."""
    python = os.path.realpath(sys.executable)
    if len(command) < 2 or {os.path.realpath(command[0]), os.path.realpath(executable)} != {python}:
        return False
    argv = command[2:] if command[1] == "-u" else command[1:]
    return bool(argv) and ((argv[0] in ("-m", "-c") and len(argv) > 1) or not argv[0].startswith("-"))


def _become(
    command,
    close_fds,
    keep,
    cwd,
    env_list,
    p2cread,
    p2cwrite,
    c2pread,
    c2pwrite,
    errread,
    errwrite,
    errpipe_read,
    errpipe_write,
    restore_signals,
    start_new_session,
    process_group,
    *rest,
) -> None:
    """In the fork: what _fork_exec does before exec, then the command; never returns."""
    try:
        preexec_fn = rest[-2]
        for fd in (p2cwrite, c2pread, errread, errpipe_read):
            if fd != -1:
                os.close(fd)
        for fd, target in ((p2cread, 0), (c2pwrite, 1), (errwrite, 2)):
            if fd != -1:
                os.dup2(fd, target)
        if close_fds:
            _close_except({0, 1, 2, *keep})
        if cwd is not None:
            os.chdir(cwd)
        if start_new_session:
            os.setsid()
        if process_group != -1:
            os.setpgid(0, process_group)
        if preexec_fn is not None:
            preexec_fn()
        if env_list is not None:
            os.environ.clear()
            os.environ.update(dict(os.fsdecode(entry).split("=", 1) for entry in env_list))
        os.close(errpipe_write)  # as a successful exec would: the parent's Popen returns
    except BaseException as err:
        os.write(errpipe_write, f"SubprocessError:0:the fork's setup failed: {err!r}".encode())
        os._exit(255)
    os._exit(_run_python(command[1:]))


def _close_except(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _run_python(argv: list[str]) -> int:
    """Run `python *argv` in this process as a fresh interpreter would (the project's modules imported anew, the
    command's own atexit handlers at the end; -u first: stdout and stderr unbuffered); its exit code."""
    if argv[0] == "-u":
        argv = argv[1:]
        for name, fd in (("stdout", 1), ("stderr", 2)):
            stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), write_through=True)
            setattr(sys, name, stream)
    # bertviz_lite, bench, tests, devtools: imported again, from the command's path.
    project = str(REPO) + os.sep
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(project):
            del sys.modules[name]
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the script's stdin object: its descriptor is closed here
    atexit._clear()
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if "torch" in sys.modules and os.environ.get("OMP_NUM_THREADS", "").isdigit():
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # what a fresh import reads
    option, target, rest = (
        (argv[0], argv[1], argv[2:]) if argv[0] in ("-m", "-c") else ("", argv[0], argv[1:])
    )
    first = {"-m": os.getcwd(), "-c": "", "": os.path.dirname(os.path.abspath(target))}[option]
    extra = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    sys.path[:] = [first, *extra, *BASE_PATH]
    code = 0
    try:
        if option == "-m":
            sys.argv = [target, *rest]  # runpy puts the module's file first
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif option == "-c":
            sys.argv = ["-c", *rest]
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(target, "<string>", "exec"), main.__dict__)
        else:
            sys.argv = [target, *rest]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as end:
        code = _exit_code(end.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def _exit_code(code) -> int:
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def answer(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()  # before any fork: a child must not inherit unwritten answers


def serve() -> None:
    """Preload (the modules named on the command line, or PRELOAD), then one forked child per request line, one at a
    time: a bench script (request["script"]) or a Python command line (request["argv"])."""
    preload(tuple(sys.argv[1:]) or PRELOAD)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            (run_command if "argv" in request else run_script)(request)
        answer({"pid": pid})
        _, status = os.waitpid(pid, 0)
        answer({"returncode": os.waitstatus_to_exitcode(status)})


class Preloaded:
    """The test's side: one preloaded interpreter, started on first use, that runs scripts (or commands) one at a time.

    modules: what it imports before it forks (PRELOAD when empty)."""

    def __init__(self, env: dict[str, str], modules: tuple[str, ...] = ()):
        self.env = env
        self.modules = modules
        self.process: subprocess.Popen | None = None
        self.pending = b""

    def start(
        self, argv: list[str], cwd: str | os.PathLike, env: dict[str, str], fork_children: bool = False
    ) -> ForkedCommand:
        """`python *argv` in a fork of the preloaded interpreter (run_command), running until its wait() returns; the
        next command starts after that. fork_children: the Python processes it starts are forked from it."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        folder = Path(tempfile.mkdtemp(prefix="preloaded_"))
        request = {
            "argv": list(argv),
            "cwd": str(cwd),
            "env": env,
            "stdout": str(folder / "stdout"),
            "stderr": str(folder / "stderr"),
            "fork_children": fork_children,
        }
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        pid = self._answer(time.monotonic() + 120)["pid"]  # the preload comes first on a fresh start
        return ForkedCommand(self, pid, folder)

    def run_command(
        self,
        argv: list[str],
        cwd: str | os.PathLike,
        env: dict[str, str],
        timeout: float,
        fork_children: bool = False,
    ) -> subprocess.CompletedProcess:
        """subprocess.run(argv, capture_output=True, text=True)'s result for `python *argv`, run in a fork (and the
        Python processes it starts, with fork_children)."""
        command = self.start(argv, cwd, env, fork_children)
        try:
            returncode = command.wait(timeout)
        finally:
            command.kill()
            command.wait()
        return subprocess.CompletedProcess(argv, returncode, command.stdout, command.stderr)

    def run(self, script: str, timeout: float, fork_children: bool = False) -> subprocess.CompletedProcess:
        """`python script --smoke` from the preloaded interpreter; subprocess.run's result, or its TimeoutExpired.

        fork_children: the Python processes the script starts are forked from it (fork_python_children)."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        with tempfile.TemporaryDirectory(prefix="bench_smoke_") as folder:
            out = Path(folder) / "stdout"
            err = Path(folder) / "stderr"
            request = {
                "script": script,
                "stdout": str(out),
                "stderr": str(err),
                "fork_children": fork_children,
            }
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            deadline = time.monotonic() + timeout
            pid = self._answer(deadline + 60)["pid"]  # the preload comes first on a fresh start
            try:
                returncode = self._answer(deadline)["returncode"]
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self._answer(time.monotonic() + 60)
                raise subprocess.TimeoutExpired(script, timeout) from None
            return subprocess.CompletedProcess(script, returncode, out.read_text(), err.read_text())

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def _start(self) -> subprocess.Popen:
        command = [sys.executable, str(Path(__file__).resolve()), *self.modules]
        return subprocess.Popen(
            command, cwd=REPO, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def _answer(self, deadline: float) -> dict:
        """The next answer line, read as it arrives (a select on the pipe; TimeoutError past the deadline)."""
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the preloaded interpreter ended (code {self.process.wait()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)


class ForkedCommand:
    """A command running in a fork of the preloaded interpreter: the part of subprocess.Popen the tests use."""

    def __init__(self, preloaded: Preloaded, pid: int, folder: Path):
        self.preloaded = preloaded
        self.pid = pid
        self.folder = folder
        self.returncode: int | None = None
        self.stdout = self.stderr = ""  # the command's output, once it has ended

    def poll(self) -> int | None:
        """The exit code if the command has ended (its answer has come), else None."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            deadline = time.monotonic() + (timeout if timeout is not None else 24 * 3600)
            try:
                self.returncode = self.preloaded._answer(deadline)["returncode"]
            except TimeoutError:
                raise subprocess.TimeoutExpired(str(self.pid), timeout) from None
            self.stdout = (self.folder / "stdout").read_text()
            self.stderr = (self.folder / "stderr").read_text()
            shutil.rmtree(self.folder)
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:  # not once it has ended: its pid may be another process's by then
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    serve()
