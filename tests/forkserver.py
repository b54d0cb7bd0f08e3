"""Processes forked from a warm server, for tests whose subject is what a run does, not how an
interpreter starts: a nested pytest session (a generated package's suite, with a mutation or
directives), an `aclnngen` command, or a `python -c` script. Each costs its own work, not the 0.3
(a command) to 3 (a pytest run importing torch) CPU-seconds of a fresh interpreter.

One server process per test worker (and per environment, below) imports torch, NumPy, hypothesis,
pytest, its plugins and aclnngen once, then forks a child per run: the child sets the run's
folder, environment and `sys.path`, runs `pytest.main(args)`, the command line's `main(argv)` or
the script with its output in files of its own, runs the process's exit handlers and exits with the
run's status. Each run is still a real process: nothing one run does (a mutation patching the
runtime, a cache record written, a directives file read) reaches another, and the server itself
never runs one. A test of the start-up itself (lazy imports, an installed venv, a variable read at
import such as runtime/callplan.py's mode, a cache a fresh process must trust or refuse) runs a
real interpreter instead: the `aclnngen_cli` fixture.

The server is keyed by the environment without the variables a run may set for itself (PER_RUN,
read by aclnngen only when a run asks for them, never at import): a pytest run whose environment
differs in anything else gets a server of its own, started in that environment, so every module
the server imported saw what a fresh interpreter would. A command or a script runs in this
process's environment with the variables the test gives set over it, on this process's server:
a variable it gives must be one the command reads when it runs. The aclnngen a run imports is the
server's, this checkout's: a PYTHONPATH that would put another first is refused.

Besides the output, a pytest child records what it collected (after -k) and each test's outcome,
as pytest's summary counts them (`Run.collected`, `Run.outcomes`), so a test needs neither a second
`--collect-only` run nor to parse the summary line.

Run as a script, this module is the server: one JSON request per line on stdin, one JSON reply
per line on stdout; it ends when its stdin closes (the test worker ended).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# What a run may set for itself: read at run time (the mutations plugin, verify.directives, pytest
# itself: the outer test's PYTEST_CURRENT_TEST changes with every test), or, for PYTHONPATH,
# applied to the child's sys.path.
PER_RUN = (
    "PYTHONPATH",
    "ACLNNGEN_MUTATION",
    "ACLNNGEN_DIRECTIVES",
    "PYTEST_CURRENT_TEST",
    "PYTEST_XDIST_WORKER",
    "PYTEST_ADDOPTS",
)

# What every generated test and command imports, besides pytest's entry-point plugins
WARM = (
    "numpy",
    "torch",
    "hypothesis",
    "cffi",
    "yaml",
    "ml_dtypes",
    "aclnngen.verify.opcheck",
    "aclnngen.verify.cases",
    "aclnngen.runtime.sim",
    "aclnngen.runtime.session",
    "aclnngen.codegen.cli",
    "aclnngen.codegen.loader",
    "aclnngen.codegen.commands.audit",
    "aclnngen.codegen.commands.diff",
    "aclnngen.codegen.commands.import_",
    "aclnngen.audit.checks",
    "aclnngen.audit.report",
)


@dataclass(frozen=True)
class Run:
    """A finished nested run: pytest's exit code (negative: killed by that signal), its output,
    the node ids it selected and, per node id, the outcome pytest counted ("passed", "failed",
    "error", "skipped", "xfailed", "xpassed")."""

    returncode: int
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    collected: tuple[str, ...] = field(default=(), repr=False)
    outcomes: dict[str, str] = field(default_factory=dict, repr=False)

    def with_outcome(self, outcome: str) -> list[str]:
        return [node for node, found in self.outcomes.items() if found == outcome]


class ForkServerError(RuntimeError):
    """The server of forked runs failed (not a test of the run: its exit status says that)."""


def run_pytest(*args, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> Run:
    """`python -m pytest ARGS` in `cwd` with environment `env` (default: this process's), as a
    forked child of a warm server."""
    env = dict(os.environ if env is None else env)
    return _run({"kind": "pytest", "args": [str(a) for a in args]}, cwd, env, env, timeout)


def run_cli(*args, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600):
    """`aclnngen ARGS` (a subprocess.CompletedProcess): what the `aclnngen_cli` fixture returns,
    from a forked child; `env`, variables set over this process's environment."""
    argv = ["aclnngen", *map(str, args)]
    done = _run({"kind": "cli", "args": argv[1:]}, cwd, {**os.environ, **(env or {})}, os.environ, timeout)
    return subprocess.CompletedProcess(argv, done.returncode, done.stdout, done.stderr)


def run_script(code: str, *args, cwd: Path | None = None, timeout: float = 300):
    """`python -c CODE ARGS` (a subprocess.CompletedProcess) from a forked child: a fresh
    namespace whose `__name__` is "__main__", `sys.argv` ["-c", *ARGS]."""
    argv = ["-c", *map(str, args)]
    done = _run({"kind": "script", "code": code, "args": argv}, cwd, dict(os.environ), os.environ, timeout)
    return subprocess.CompletedProcess(argv, done.returncode, done.stdout, done.stderr)


@pytest.fixture
def forked_cli():
    """`aclnngen ARGS` in a forked child (`run_cli`): what `aclnngen_cli` gives, without the
    start-up; the conftest.py of a folder whose command tests take it imports this fixture."""
    return run_cli


def _run(request: dict, cwd, env: dict[str, str], server_env, timeout: float) -> Run:
    for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
        if (Path(entry) / "aclnngen").exists():
            raise ValueError(f"PYTHONPATH entry {entry} holds an aclnngen: the server's own would be used instead")
    with tempfile.TemporaryDirectory(prefix="forked-run-") as scratch:
        files = {name: str(Path(scratch) / name) for name in ("stdout", "stderr", "record")}
        request = {**request, "cwd": str(cwd or os.getcwd()), "env": env, "timeout": timeout, **files}
        returncode = _server(dict(server_env)).ask(request)
        recorded = Path(files["record"])  # none when the child was killed, or ran no pytest
        record = json.loads(recorded.read_text(encoding="utf-8")) if recorded.is_file() else {}
        return Run(
            returncode,
            Path(files["stdout"]).read_text(encoding="utf-8", errors="replace"),
            Path(files["stderr"]).read_text(encoding="utf-8", errors="replace"),
            tuple(record.get("collected", ())),
            record.get("outcomes", {}),
        )


# --- the client's end ---------------------------------------------------------------------------


class _Server:
    def __init__(self, env: dict[str, str]):
        self._log = tempfile.TemporaryFile(prefix="forkserver-")
        self._process = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
        )

    def ask(self, request: dict) -> int:
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            reply = self._process.stdout.readline()
        except OSError as exc:
            reply = f"{exc}"
        except BaseException:  # interrupted while a run goes on: its reply would answer the next request
            self._process.kill()
            _forget(self)
            raise
        if not reply.startswith("{"):
            self._log.seek(0)
            _forget(self)
            raise ForkServerError(f"the fork server ended: {reply!r}\n{self._log.read().decode()[-3000:]}")
        return json.loads(reply)["returncode"]

    def close(self) -> None:
        try:
            self._process.stdin.close()
            self._process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
        self._log.close()


_SERVERS: dict[frozenset, _Server] = {}


def server_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment of the server that runs a run with environment `env`."""
    return {k: v for k, v in env.items() if k not in PER_RUN}


def _server(env: dict[str, str]) -> _Server:
    start = server_environment(env)
    key = frozenset(start.items())
    if key not in _SERVERS:
        if not _SERVERS:
            atexit.register(_close_servers)
        _SERVERS[key] = _Server(start)
    return _SERVERS[key]


def _forget(server: _Server) -> None:
    """A server that ended is replaced by a new one at the next run."""
    for key in [k for k, s in _SERVERS.items() if s is server]:
        del _SERVERS[key]


def _close_servers() -> None:
    while _SERVERS:
        _SERVERS.popitem()[1].close()


# --- the server's end ---------------------------------------------------------------------------


class _Recorder:
    """A plugin of the child's session: the node ids selected, the outcome of each."""

    def __init__(self):
        self.collected: list[str] = []
        self.outcomes: dict[str, str] = {}

    def pytest_collection_finish(self, session):
        self.collected = [item.nodeid for item in session.items]

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or not report.passed:
            self.outcomes[report.nodeid] = _category(report)


def _category(report) -> str:
    if hasattr(report, "wasxfail"):
        return "xpassed" if report.passed else "xfailed"
    if report.failed and report.when != "call":
        return "error"
    return report.outcome


def _child(request: dict, base_path: list[str]) -> int:
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [request["cwd"], *extra, *base_path]  # as `python -m` or `-c` with that PYTHONPATH sets it
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], None), (2, request["stderr"], None)):
        opened = os.open(name, flags if flags is not None else os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(os.devnull)  # noqa: SIM115  (the child's stdin, as a shell gives an empty one)
    signal.alarm(max(1, int(request["timeout"])))  # SIGALRM's default action ends the child
    return {"pytest": _pytest_child, "cli": _cli_child, "script": _script_child}[request["kind"]](request)


def _pytest_child(request: dict) -> int:
    sys.argv = [str(Path(pytest.__file__).with_name("__main__.py")), *request["args"]]
    recorder = _Recorder()
    try:
        code = int(pytest.main(request["args"], plugins=[recorder]))
    except BaseException:  # noqa: BLE001  (reported like pytest's internal error)
        traceback.print_exc()
        code = int(pytest.ExitCode.INTERNAL_ERROR)
    Path(request["record"]).write_text(
        json.dumps({"collected": recorder.collected, "outcomes": recorder.outcomes}), encoding="utf-8"
    )
    return code


def _cli_child(request: dict) -> int:
    from aclnngen.codegen import cli

    sys.argv = ["aclnngen", *request["args"]]
    return _exit_status(lambda: cli.main(request["args"]))


def _script_child(request: dict) -> int:
    sys.argv = request["args"]
    code = compile(request["code"], "<string>", "exec")
    return _exit_status(lambda: exec(code, {"__name__": "__main__"}))


def _exit_status(body) -> int:
    """The status a process running `body` ends with: its return value or SystemExit's code, 1
    with the traceback on stderr for an exception, as the interpreter reports them."""
    try:
        code = body()
    except SystemExit as exc:
        code = exc.code
        if not isinstance(code, (int, type(None))):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001  (what the interpreter prints for an uncaught exception)
        traceback.print_exc()
        code = 1
    return code if isinstance(code, int) else 0


class _Warm:
    """A plugin of the server's one session of its own, which imports WARM while pytest's assertion
    rewriting is on, as a fresh run's session imports them: the modules of the packages whose
    plugins pytest loads (aclnngen, hypothesis) are rewritten as they would be there, and a child's
    pytest, finding them loaded by its rewriting hook, has nothing to warn about."""

    def pytest_sessionstart(self, session):
        import importlib

        for name in WARM:
            importlib.import_module(name)


def _warm_up() -> None:
    with tempfile.TemporaryDirectory(prefix="forkserver-warm-") as empty:
        pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", "--rootdir", empty, empty], plugins=[_Warm()])


def serve() -> None:
    import gc

    replies = os.fdopen(os.dup(1), "w")  # stdout is pytest's from here on: the warm-up's, a child's
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    base_path = sys.path[1:]  # without this script's folder
    _warm_up()
    gc.freeze()  # children inherit what is imported; their collections need not walk it
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 3  # pytest's INTERNAL_ERROR, should the child fail before its run says
            try:
                replies.close()
                code = _child(request, base_path)
            finally:
                # what a process's end does that a run could show: its exit handlers (the
                # backend's shutdown), its output flushed; not the interpreter's teardown
                atexit._run_exitfuncs()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        returncode = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        replies.write(json.dumps({"returncode": returncode}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
