"""`aclnngen` commands and Python scripts run alone, each in a process of its own forked from a server
that imported the package once: each run has its own pid, stdin (empty), stdout, stderr, working
folder and exit status, as from a shell, without an interpreter's start-up and the package's
imports (~0.3 CPU-s of a `python -m aclnngen.codegen.cli` run, ~0.05 here).

For tests whose subject is what a command or a script does. A test of the start-up itself (lazy
imports, an installed venv, a variable read at import such as runtime/callplan.py's mode, a cache a
fresh process must trust or refuse) runs a real interpreter instead: the `aclnngen_cli` fixture.
The server is started by the first run in a test process and shared by every test there."""

from __future__ import annotations

import atexit
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

# imported once by the server: what the commands and the audit's reproducers import anyway
PRELOAD = (
    "numpy",
    "ml_dtypes",
    "aclnngen.codegen.cli",
    "aclnngen.codegen.loader",
    "aclnngen.codegen.commands.audit",
    "aclnngen.codegen.commands.diff",
    "aclnngen.codegen.commands.import_",
    "aclnngen.audit.checks",
    "aclnngen.audit.report",
    "aclnngen.runtime.session",
    "aclnngen.verify.cases",
    "aclnngen.verify.opcheck",
)

# The server: one JSON request a line on stdin, one JSON answer a line on its own channel (fd 1 is
# the children's). Each request is run in a forked child whose fds 0, 1 and 2 are /dev/null and
# two files; the child runs the command's main() or the script and exits with its status.
_SERVER = r"""
import importlib, json, os, signal, sys, tempfile, traceback
for name in sys.argv[1:]:
    importlib.import_module(name)
channel = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)


def child(request, out, err):
    code = 1
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdin = open(os.devnull)
        if request["cwd"]:
            os.chdir(request["cwd"])
        os.environ.update(request["env"])
        signal.alarm(max(1, int(request["timeout"])))
        sys.argv = request["argv"]
        try:
            if request["code"] is None:
                from aclnngen.codegen import cli

                code = cli.main(request["argv"][1:])
            else:
                exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
                code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code if isinstance(code, int) else 1)


for line in sys.stdin:
    request = json.loads(line)
    for name in request["imports"]:  # kept for the later runs
        importlib.import_module(name)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            child(request, out, err)
        _, status = os.waitpid(pid, 0)
        answer = {"returncode": os.waitstatus_to_exitcode(status)}
        for name, f in (("stdout", out), ("stderr", err)):
            f.seek(0)
            answer[name] = f.read().decode("utf-8", "replace")
    channel.write(json.dumps(answer) + "\n")
    channel.flush()
"""


class ForkServer:
    def __init__(self, preload: tuple[str, ...] = PRELOAD):
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _run(self, argv: list[str], code: str | None, cwd, timeout: float, imports, env) -> subprocess.CompletedProcess:
        request = {
            "argv": argv,
            "code": code,
            "cwd": str(cwd) if cwd else None,
            "timeout": timeout,
            "imports": imports,
            "env": dict(env or {}),
        }
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended (exit {self._process.wait()}); see the test's stderr")
        answer = json.loads(line)
        return subprocess.CompletedProcess(argv, answer["returncode"], answer["stdout"], answer["stderr"])

    def cli(
        self, *args, cwd: Path | None = None, env=None, timeout: float = 600, imports=()
    ) -> subprocess.CompletedProcess:
        """`aclnngen ARGS`: what the aclnngen_cli fixture returns, from a forked process. `env`: the
        variables set in the child over the server's environment (read when the command runs; one
        a preloaded module reads at import needs a real interpreter). `imports`: modules the server
        imports first, for this run and the later ones (torch, ~1.5 CPU-s)."""
        return self._run(["aclnngen", *map(str, args)], None, cwd, timeout, list(imports), env)

    def script(self, code: str, *args, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """`python -c CODE ARGS` from a forked process (a fresh namespace, `__name__` "__main__")."""
        return self._run(["-c", *map(str, args)], code, cwd, timeout, [], None)

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(timeout=60)


@functools.cache
def shared() -> ForkServer:
    """The test process's one server, ended when the process ends."""
    server = ForkServer()
    atexit.register(server.close)
    return server


@pytest.fixture
def forked_cli():
    """`aclnngen ARGS` in a forked process: what `aclnngen_cli` gives, without the start-up; the
    conftest.py of a test folder whose command tests take it imports this fixture."""
    return shared().cli
