"""Test directives: how tests treat an op (expected failures, tolerance overrides), each with a reason.

They live in one data file apart from the specs (tests/directives.yaml), in OpInfo's spirit: the
spec says what the vendor claims; a directive says how a test treats that claim, and why. Each
entry is scoped to (op, test, family, dtype); a missing scope key matches anything.

Ops are namespaced: an entry also has a `package` (the package whose op it is about). Entries of
the repository's own tests/directives.yaml are about the built-in package unless they say
otherwise, so they never apply to a custom package's op of the same name; entries of a file given
with $ACLNNGEN_DIRECTIVES apply to any package unless they name one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from .simkernels import BUILTIN_PACKAGE

SCOPE_KEYS = ("op", "test", "family", "dtype")
TOLERANCE_KEYS = ("rtol", "atol")


class DirectiveError(Exception):
    user_facing = True


@dataclass(frozen=True)
class Directive:
    scope: tuple  # (op, test, family, dtype), None = any
    reason: str
    case: str | None = None  # a substring of the test id, to narrow further
    rtol: float | None = None
    atol: float | None = None
    package: str | None = None  # the package of the op; None = any

    def matches(self, op, test, family, dtype, case_id: str = "", package: str | None = None) -> bool:
        if self.package is not None and self.package != (package or BUILTIN_PACKAGE):
            return False
        for want, have in zip(self.scope, (op, test, family, dtype)):
            if want is not None and want != have:
                return False
        return self.case is None or self.case in case_id


@dataclass(frozen=True)
class Directives:
    expected_failures: tuple[Directive, ...] = ()
    tolerances: tuple[Directive, ...] = ()

    def expected_failure(self, op, test, family, dtype, case_id: str = "", package: str | None = None) -> Directive | None:
        return next((d for d in self.expected_failures if d.matches(op, test, family, dtype, case_id, package)), None)

    def tolerance(self, op, test, family, dtype, case_id: str = "", package: str | None = None) -> Directive | None:
        return next((d for d in self.tolerances if d.matches(op, test, family, dtype, case_id, package)), None)


def _entry(raw, where: str, tolerance: bool, default_package: str | None = None) -> Directive:
    if not isinstance(raw, dict):
        raise DirectiveError(f"{where}: expected a mapping")
    allowed = set(SCOPE_KEYS) | {"reason", "case", "package"} | (set(TOLERANCE_KEYS) if tolerance else set())
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise DirectiveError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise DirectiveError(f"{where}: every directive needs a 'reason'")
    if tolerance and not any(k in raw for k in TOLERANCE_KEYS):
        raise DirectiveError(f"{where}: a tolerance override needs rtol or atol")
    return Directive(
        scope=tuple(raw.get(k) for k in SCOPE_KEYS),
        reason=reason.strip(),
        case=raw.get("case"),
        rtol=raw.get("rtol"),
        atol=raw.get("atol"),
        package=raw.get("package", default_package),
    )


def parse(data, source: str, default_package: str | None = None) -> Directives:
    data = data or {}
    if not isinstance(data, dict):
        raise DirectiveError(f"{source}: expected a mapping with expected_failures and tolerances")
    unknown = sorted(set(data) - {"expected_failures", "tolerances"})
    if unknown:
        raise DirectiveError(f"{source}: unknown key(s) {unknown}")
    return Directives(
        tuple(_entry(e, f"{source}: expected_failures[{i}]", False, default_package) for i, e in enumerate(data.get("expected_failures") or [])),
        tuple(_entry(e, f"{source}: tolerances[{i}]", True, default_package) for i, e in enumerate(data.get("tolerances") or [])),
    )


def _repo_file() -> Path:
    return Path(__file__).resolve().parent.parent / "tests" / "directives.yaml"


def default_path() -> Path | None:
    env = os.environ.get("ACLNNGEN_DIRECTIVES")
    if env:
        return Path(env)
    repo_file = _repo_file()
    return repo_file if repo_file.exists() else None


@lru_cache(maxsize=None)
def load(path: Path | None = None) -> Directives:
    path = path or default_path()
    if path is None:
        return Directives()
    try:
        # the repository's own file is about the built-in ops (see the module docstring)
        own = Path(path).resolve() == _repo_file().resolve()
        return parse(yaml.safe_load(Path(path).read_text(encoding="utf-8")), str(path), BUILTIN_PACKAGE if own else None)
    except (OSError, yaml.YAMLError) as exc:
        raise DirectiveError(f"{path}: cannot read the directives: {exc}") from None
