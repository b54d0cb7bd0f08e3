"""Behaviour profiles: what an implementation of an op really checks, kept apart from the spec.

A profile is data, one file per (op, CANN release), under `specs/profiles/<profile>/<release>/<op>.yaml`.
The simulator checks parameters by a profile: `spec` (implicit) follows the spec's own rules;
`vendor` models the vendor implementation's known checks; a recorded audit of a real NPU can be
written as another profile. Each change to the spec's rules carries its reason; each dtype list
(`dtypes`) is what the implementation accepts for some tensors on some product families, replacing
the page's list there (the implementation's support list per SoC). Three facts describe the
checks themselves: `unchecked_nulls` (required parameters the implementation never null-checks),
`early_returns` (an empty tensor answered with success before the remaining checks, per family) and
`check_order` (which violation is reported first when a call breaks several; aclnngen.core.checks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from aclnngen.core.checks import ORDER_NAMES
from aclnngen.core.kinds import KIND_NAMES

from .errors import Problem, SpecError
from .loader import validate_model
from .model import CIdentifier, DType, FamilyId, Frozen, NonEmptyText, OpSpec, Version, rule_params
from .yamlio import read_yaml


class ProfileChange(Frozen):
    action: Literal["drop", "allow", "exclude_params"]
    rule: Literal[KIND_NAMES]
    params: list[CIdentifier] = []
    reason: NonEmptyText


class ProfileDtypes(Frozen):
    """The dtypes the implementation accepts for `params` on `families`: it replaces the page's list
    for those families (with `when`, the dtypes are accepted only while each named scalar or
    attribute has the given value, as in a spec's dtype rows)."""

    params: list[CIdentifier] = Field(min_length=1)
    families: list[FamilyId] = Field(min_length=1)
    dtypes: list[DType] = Field(min_length=1)
    when: dict[CIdentifier, bool | int | float | str] = {}
    reason: NonEmptyText


class UncheckedNull(Frozen):
    """Required parameters the implementation reads without a null check: a NULL one is
    dereferenced (the simulator answers 561103 once the other checks pass, as for an unchecked
    out-pointer), never refused with 161001."""

    params: list[CIdentifier] = Field(min_length=1)
    reason: NonEmptyText


class EarlyReturn(Frozen):
    """When one of `params` is empty, the implementation returns success with no work at this
    step of `check_order` (default: right after the null checks), skipping every later check."""

    when: Literal["empty"] = "empty"
    params: list[CIdentifier] = Field(min_length=1)
    families: list[FamilyId] = []
    """Only on these families (empty: on every family)."""
    reason: NonEmptyText


class CheckOrder(Frozen):
    """The order of the checks: steps of aclnngen.core.checks.STEPS or rule kind names; the steps
    not named follow in the default order."""

    steps: list[Literal[ORDER_NAMES]] = Field(min_length=1)
    reason: NonEmptyText


class Profile(Frozen):
    op: CIdentifier
    cann_version: Version
    evidence: NonEmptyText
    null_out_pointers: Literal["checked", "unchecked"]
    changes: list[ProfileChange] = Field(default_factory=list)
    dtypes: list[ProfileDtypes] = Field(default_factory=list)
    notes: list[NonEmptyText] = Field(default_factory=list)
    """Behaviour seen that no change or dtype list expresses (written by `audit --save-profile`)."""
    unchecked_nulls: list[UncheckedNull] = Field(default_factory=list)
    early_returns: list[EarlyReturn] = Field(default_factory=list)
    check_order: CheckOrder | None = None

    def as_data(self) -> dict:
        """The profile as plain data for generated/profiles.py; the facts about the checks only
        when stated, so a profile without them renders as before they existed."""
        data = self.model_dump(mode="python")
        for key in _STATED_ONLY:
            if not data[key]:
                del data[key]
        return data


_STATED_ONLY = ("unchecked_nulls", "early_returns", "check_order")


def profile_paths(specs_dir: Path) -> list[Path]:
    return sorted((Path(specs_dir) / "profiles").glob("*/*/*.yaml"))


def load_profiles(specs_dir: Path, specs: dict[str, OpSpec]) -> list[tuple[str, Profile]]:
    """(profile name, profile) for every profile file, checked against the op it names."""
    found, problems = [], []
    for path in profile_paths(specs_dir):
        try:
            data, lines = read_yaml(path)
            profile = validate_model(Profile, data, path, lines)
            _check(profile, path, lines, specs)
            found.append((path.parent.parent.name, profile))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return found


def _check(profile: Profile, path: Path, lines, specs: dict[str, OpSpec]) -> None:
    spec = specs.get(profile.op)
    if spec is None:
        raise SpecError(Problem(str(path), lines.line_of(("op",)), f"no spec for op {profile.op!r}"))
    if path.stem != spec.snake_name or path.parent.name != profile.cann_version:
        raise SpecError(
            Problem(
                str(path),
                1,
                f"a profile of {profile.op} at {profile.cann_version} lives in {profile.cann_version}/{spec.snake_name}.yaml",
            )
        )
    for i, change in enumerate(profile.changes):
        rules = [r for r in spec.rules if r.kind == change.rule]
        if not rules:
            raise SpecError(
                Problem(
                    str(path),
                    lines.line_of(("changes", i, "rule")),
                    f"{profile.op} has no {change.rule!r} rule to change",
                )
            )
        named = {n for r in rules for _, n in rule_params(r)}
        for j, param in enumerate(change.params):
            if param not in named:
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("changes", i, "params", j)),
                        f"no {change.rule!r} rule names {param!r}",
                    )
                )
        if (change.action == "exclude_params") != bool(change.params):
            raise SpecError(
                Problem(
                    str(path), lines.line_of(("changes", i)), "'params' goes with (and only with) action exclude_params"
                )
            )
    _check_dtypes(profile, path, lines, spec)
    _check_checks(profile, path, lines, spec)


def _check_checks(profile: Profile, path: Path, lines, spec: OpSpec) -> None:
    """The facts about the checks name the op's own parameters, families and rule kinds."""
    by_name = {p.name: p for p in spec.parameters}
    families = {p.family for p in spec.products if p.supported}
    for i, entry in enumerate(profile.unchecked_nulls):
        for j, name in enumerate(entry.params):
            param = by_name.get(name)
            if param is None or param.optional or param.role in ("optional_scalar", "attribute"):
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("unchecked_nulls", i, "params", j)),
                        f"{profile.op} has no required tensor or scalar {name!r} whose null check could be missing",
                    )
                )
    for i, entry in enumerate(profile.early_returns):
        for j, name in enumerate(entry.params):
            if name not in by_name or not by_name[name].is_tensor:
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("early_returns", i, "params", j)),
                        f"{profile.op} has no tensor {name!r} whose emptiness could end the checks",
                    )
                )
        for j, family in enumerate(entry.families):
            if family not in families:
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("early_returns", i, "families", j)),
                        f"{profile.op}'s spec lists {family!r} as no product it supports",
                    )
                )
    if profile.check_order is not None:
        steps = profile.check_order.steps
        kinds = {r.kind for r in spec.rules}
        for j, step in enumerate(steps):
            where = lines.line_of(("check_order", "steps", j))
            if steps.index(step) != j:
                raise SpecError(Problem(str(path), where, f"check step {step!r} is named twice"))
            if step in KIND_NAMES and step not in kinds:
                raise SpecError(Problem(str(path), where, f"{profile.op} has no {step!r} rule to place in the order"))


def _check_dtypes(profile: Profile, path: Path, lines, spec: OpSpec) -> None:
    by_name = {p.name: p for p in spec.parameters}
    families = {p.family for p in spec.products if p.supported}
    for i, entry in enumerate(profile.dtypes):
        for j, name in enumerate(entry.params):
            param = by_name.get(name)
            if param is None or param.role not in ("input", "output"):
                tensors = ", ".join(p.name for p in spec.parameters if p.role in ("input", "output"))
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("dtypes", i, "params", j)),
                        f"{profile.op} has no tensor {name!r} to list dtypes for; its tensors are {tensors}",
                    )
                )
        for j, family in enumerate(entry.families):
            if family not in families:
                raise SpecError(
                    Problem(
                        str(path),
                        lines.line_of(("dtypes", i, "families", j)),
                        f"{profile.op}'s spec lists {family!r} as no product it supports",
                    )
                )
        for name in entry.when:
            if name not in by_name:
                raise SpecError(
                    Problem(str(path), lines.line_of(("dtypes", i, "when")), f"{profile.op} has no parameter {name!r}")
                )
