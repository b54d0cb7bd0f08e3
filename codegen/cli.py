"""The `aclnngen` command: a thin dispatcher that imports a subcommand's module only when it runs.

Each subcommand lives in `codegen/commands/<name>.py` with `add_arguments(parser)` and
`run(args) -> int`. Typed errors reach the user as `path:line: message` lines and an exit code;
only a bug in aclnngen itself shows a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> one-line help; the module is aclnngen.codegen.commands.<name>
COMMANDS = {
    "specs": "list the specs with their products and dtypes per product",
    "validate": "validate spec files (default: every spec under specs/)",
    "generate": "render bindings, references, tests and docs from the specs",
    "check": "fail when generated files are stale (renders into memory)",
    "run": "run every op (or a TTK case file's cases) on the active backend against the reference",
    "export": "write each op's cases as files of the vendor's test tool (TTK ACLNN CSV)",
    "info": "show the backend, libraries, SoC, product family and CANN version",
    "diff": "classify the changes between two specs, or one spec at two releases (--at)",
    "import": "turn doc pages into draft specs, or merge a newer page into a spec (--into)",
    "catalog": "import every aclnn page of the vendor's repositories as binding-tier specs and count",
    "audit": "check each op's page against the library's behaviour (sim, torch or cann) and report",
}
# commands whose module name differs from the command (a Python keyword)
MODULES = {"import": "import_"}


class _Version(argparse.Action):
    """--version, reading the installed version only when asked: importlib.metadata costs ~150 ms,
    a sixth of a warm `aclnngen check`, on every other command too were it read to build the parser."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from aclnngen import __version__

        print(f"aclnngen {__version__}")  # to stdout, as argparse's own version action does
        parser.exit()


def _parser(selected: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aclnngen", description="Bindings, tests and docs for aclnn operators, from YAML specs."
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_text in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        command_parser.add_argument(
            "--json", action="store_true", help="print one JSON object instead of the table (docs/cli.md)"
        )
        if name == selected:
            _module(name).add_arguments(command_parser)
    return parser


def _module(name: str):
    return importlib.import_module(f"aclnngen.codegen.commands.{MODULES.get(name, name)}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    selected = selected if selected in COMMANDS else None
    args = _parser(selected).parse_args(argv)
    from .errors import GenerateError, SpecError

    try:
        return int(_module(args.command).run(args) or 0)
    except SpecError as exc:
        if args.json:
            _json_failure(args.command, "invalid specs", exc.problems)
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 1
    except GenerateError as exc:
        if args.json:
            _json_failure(args.command, str(exc), [])
        print(f"aclnngen {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except Exception as exc:  # typed errors of the runtime carry their own message
        if getattr(exc, "user_facing", False):
            if args.json:
                _json_failure(args.command, str(exc), [])
            print(f"aclnngen {args.command}: {_one_line(str(exc))}", file=sys.stderr)
            return _exit_code(exc)
        return _internal_error(args.command, exc)
    except RecursionError as exc:  # pragma: no cover - RecursionError is an Exception; kept for clarity
        return _internal_error(args.command, exc)


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"


def _internal_error(command: str, exc: BaseException) -> int:
    """Anything unexpected is a bug of aclnngen: one line and how to see more, never a traceback
    (unless ACLNNGEN_DEBUG=1)."""
    if os.environ.get("ACLNNGEN_DEBUG") == "1":
        raise exc
    print(
        f"aclnngen {command}: internal error: {type(exc).__name__}: {_one_line(str(exc))[:300]} "
        "(a bug in aclnngen: please report it; ACLNNGEN_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    return 1


def _exit_code(exc: BaseException) -> int:
    """1 for a typed error, `EXIT_NO_CANN` for a missing CANN (the same in every command)."""
    from aclnngen.runtime.errors import CannNotFoundError

    from .commands.jsonout import EXIT_NO_CANN

    return EXIT_NO_CANN if isinstance(exc, CannNotFoundError) else 1


def _json_failure(command: str, error: str, problems) -> None:
    """The shape every command prints under --json when it fails before its own verdict."""
    from .commands.jsonout import failure

    failure(command, error, problems)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
