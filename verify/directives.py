"""Test directives: how tests treat an op (expected failures, tolerance overrides), each with a reason.

They live in a data file apart from the specs, in OpInfo's spirit: the spec says what the vendor
claims; a directive says how a test treats that claim, and why. Each entry is scoped to
(op, test, family, dtype); a missing scope key matches anything; `case` narrows to test ids.

Where: the `directives.yaml` in a test file's folder or the folder above it (the repository's
tests/directives.yaml for tests/generated/; a custom package's `<package>/tests/directives.yaml`
for its tests), or the file $ACLNNGEN_DIRECTIVES names, for every test.

Nothing is silently ignored: an unknown key, test kind, family or dtype is an error when the file
is read; an op that no generated test of the file's folder tests, and an expected failure that
matches no collected test, are errors at collection (verify/pytest_plugin.py); a tolerance
applies to the tests that compare numbers (reference, binding), bit-exact outputs included, and
is refused for any other test kind.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from aclnngen.runtime.products import family_ids
from aclnngen.runtime.shapes import NUMPY_DTYPES

SCOPE_KEYS = ("op", "test", "family", "dtype")
TOLERANCE_KEYS = ("rtol", "atol")
FILE_NAME = "directives.yaml"
ENV = "ACLNNGEN_DIRECTIVES"

# The test kinds of the generated tests (codegen/templates/test_op.py.j2), and those that compare numbers.
TEST_KINDS = (
    "reference",
    "binding",
    "validator_dtype",
    "validator_shape",
    "null_pointer",
    "scalar_constraint",
    "return_code",
)
NUMERIC_TESTS = ("reference", "binding")


class DirectiveError(Exception):
    user_facing = True


def snake(op: str) -> str:
    """The op's file name stem (codegen's OpSpec.snake_name)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


@dataclass(frozen=True)
class Directive:
    scope: tuple  # (op, test, family, dtype), None = any
    reason: str
    where: str = ""  # file: section[index], for messages
    case: tuple[str, ...] | None = None  # test-id patterns: a substring, or a glob with * ? [
    rtol: float | None = None
    atol: float | None = None

    def matches(self, op, test, family, dtype, case_id: str = "") -> bool:
        for want, have in zip(self.scope, (op, test, family, dtype)):
            if want is not None and want != have:
                return False
        return self.case is None or any(_case_matches(c, case_id) for c in self.case)


def _case_matches(pattern: str, case_id: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(case_id, pattern if pattern.startswith("*") else f"*{pattern}*")
    return pattern in case_id


@dataclass(frozen=True)
class Directives:
    expected_failures: tuple[Directive, ...] = ()
    tolerances: tuple[Directive, ...] = ()
    source: str = ""

    def expected_failure(self, op, test, family, dtype, case_id: str = "") -> Directive | None:
        return next((d for d in self.expected_failures if d.matches(op, test, family, dtype, case_id)), None)

    def tolerance(self, op, test, family, dtype, case_id: str = "") -> Directive | None:
        return next((d for d in self.tolerances if d.matches(op, test, family, dtype, case_id)), None)

    def all(self) -> tuple[Directive, ...]:
        return self.expected_failures + self.tolerances

    def check_ops(self, known: set[str]) -> None:
        """Every op a directive names is one of `known` (CamelCase names), else DirectiveError."""
        for d in self.all():
            op = d.scope[0]
            if op is not None and op not in known:
                hint = f"; known: {', '.join(sorted(known))}" if known else ""
                raise DirectiveError(
                    f"{d.where}: unknown op {op!r}: no generated test near {self.source} tests it{hint}"
                )


def _known(value, allowed, what: str, where: str):
    if value is not None and allowed is not None and value not in allowed:
        raise DirectiveError(f"{where}: unknown {what} {value!r}; known: {', '.join(allowed)}")


def _entry(raw, where: str, tolerance: bool, families, dtypes) -> Directive:
    if not isinstance(raw, dict):
        raise DirectiveError(f"{where}: expected a mapping")
    allowed = set(SCOPE_KEYS) | {"reason", "case"} | (set(TOLERANCE_KEYS) if tolerance else set())
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise DirectiveError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise DirectiveError(f"{where}: every directive needs a 'reason'")
    for key in SCOPE_KEYS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise DirectiveError(f"{where}: {key} must be a string, not {type(raw[key]).__name__}")
    _known(raw.get("test"), TEST_KINDS, "test", where)
    _known(raw.get("family"), families, "family", where)
    _known(raw.get("dtype"), dtypes, "dtype", where)
    case = raw.get("case")
    if case is not None:
        case = (case,) if isinstance(case, str) else case
        if not isinstance(case, (list, tuple)) or not case or not all(isinstance(c, str) and c for c in case):
            raise DirectiveError(f"{where}: case is a test-id substring or glob, or a non-empty list of them")
        case = tuple(case)
    if tolerance:
        if not any(k in raw for k in TOLERANCE_KEYS):
            raise DirectiveError(f"{where}: a tolerance override needs rtol or atol")
        for key in TOLERANCE_KEYS:
            value = raw.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise DirectiveError(f"{where}: {key} must be a number >= 0, not {value!r}")
        if raw.get("test") is not None and raw["test"] not in NUMERIC_TESTS:
            raise DirectiveError(
                f"{where}: a tolerance applies to tests that compare numbers ({', '.join(NUMERIC_TESTS)}), "
                f"not to {raw['test']!r}"
            )
    return Directive(
        scope=tuple(raw.get(k) for k in SCOPE_KEYS),
        reason=reason.strip(),
        where=where,
        case=case,
        rtol=raw.get("rtol"),
        atol=raw.get("atol"),
    )


def parse(data, source: str, *, families=None, dtypes=None) -> Directives:
    """`families`/`dtypes`: the known names (None: not checked; load() passes the real ones)."""
    data = data or {}
    if not isinstance(data, dict):
        raise DirectiveError(f"{source}: expected a mapping with expected_failures and tolerances")
    unknown = sorted(set(data) - {"expected_failures", "tolerances"})
    if unknown:
        raise DirectiveError(f"{source}: unknown key(s) {unknown}")
    sections = {}
    for key, tolerance in (("expected_failures", False), ("tolerances", True)):
        entries = data.get(key) or []
        if not isinstance(entries, list):
            raise DirectiveError(f"{source}: {key} is a list")
        sections[key] = tuple(
            _entry(e, f"{source}: {key}[{i}]", tolerance, families, dtypes) for i, e in enumerate(entries)
        )
    return Directives(sections["expected_failures"], sections["tolerances"], source)


def near(test_file: str | Path | None) -> Path | None:
    """The directives for a test file: $ACLNNGEN_DIRECTIVES, else directives.yaml in the file's
    folder or the folder above it, else the repository's tests/directives.yaml."""
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    if test_file is not None:
        folder = Path(test_file).resolve().parent
        for candidate in (folder / FILE_NAME, folder.parent / FILE_NAME):
            if candidate.is_file():
                return candidate
        return None
    return default_path()


def default_path() -> Path | None:
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    repo_file = Path(__file__).resolve().parent.parent / "tests" / FILE_NAME
    return repo_file if repo_file.exists() else None


@lru_cache(maxsize=None)
def load(path: Path | None = None) -> Directives:
    path = path or default_path()
    if path is None:
        return Directives()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DirectiveError(f"{path}: cannot read the directives: {exc}") from None
    return parse(data, str(path), families=tuple(family_ids()), dtypes=tuple(NUMPY_DTYPES))
