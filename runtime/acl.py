"""CANN ABI values by name, from generated/abi.py (whose one source is specs/abi.yaml).

The runtime names the enum members and status codes it passes or expects instead of writing
their numbers again: a wrong number here would be a wrong argument in a real NPU process.
"""

from __future__ import annotations

from functools import lru_cache

from aclnngen.generated import abi


@lru_cache(maxsize=None)
def _members() -> dict[str, int]:
    return {member: value for members in abi.ENUMS.values() for member, value in members.items()}


@lru_cache(maxsize=None)
def _statuses() -> dict[str, int]:
    return {name: code for codes in abi.STATUS.values() for code, (name, _) in codes.items()}


def enum_value(member: str) -> int:
    """The value of an enum member, e.g. enum_value("ACL_FORMAT_ND") == 2."""
    return _members()[member]


def status_code(name: str) -> int:
    """The code of a status, e.g. status_code("ACLNN_ERR_PARAM_NULLPTR") == 161001."""
    return _statuses()[name]
