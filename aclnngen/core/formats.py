"""Tensor formats (aclFormat) as a spec names them: the enum's member names without their prefix.

The table mirrors the aclFormat members of specs/abi.yaml one for one (UNDEFINED aside, which no
tensor is created with); tests/runtime/test_formats.py checks that it does. A tensor whose spec states no
format accepts ND alone, on every family, which is what every binding sent before formats existed.
"""

from __future__ import annotations

#: spec name -> the aclFormat member it stands for, in the enum's order
ACL_MEMBERS: dict[str, str] = {
    "NCHW": "ACL_FORMAT_NCHW",
    "NHWC": "ACL_FORMAT_NHWC",
    "ND": "ACL_FORMAT_ND",
    "NC1HWC0": "ACL_FORMAT_NC1HWC0",
    "FRACTAL_Z": "ACL_FORMAT_FRACTAL_Z",
    "NC1HWC0_C04": "ACL_FORMAT_NC1HWC0_C04",
    "HWCN": "ACL_FORMAT_HWCN",
    "NDHWC": "ACL_FORMAT_NDHWC",
    "FRACTAL_NZ": "ACL_FORMAT_FRACTAL_NZ",
    "NCDHW": "ACL_FORMAT_NCDHW",
    "NDC1HWC0": "ACL_FORMAT_NDC1HWC0",
    "FRACTAL_Z_3D": "ACL_FRACTAL_Z_3D",
    "NC": "ACL_FORMAT_NC",
    "NCL": "ACL_FORMAT_NCL",
    "FRACTAL_NZ_C0_16": "ACL_FORMAT_FRACTAL_NZ_C0_16",
    "FRACTAL_NZ_C0_32": "ACL_FORMAT_FRACTAL_NZ_C0_32",
    "FRACTAL_NZ_C0_2": "ACL_FORMAT_FRACTAL_NZ_C0_2",
    "FRACTAL_NZ_C0_4": "ACL_FORMAT_FRACTAL_NZ_C0_4",
    "FRACTAL_NZ_C0_8": "ACL_FORMAT_FRACTAL_NZ_C0_8",
}
FORMATS: tuple[str, ...] = tuple(ACL_MEMBERS)
#: the dims a tensor of a layout format has, for the formats whose name spells them (the planner
#: gives a tensor that accepts only such formats as many dims; the others have no one rank)
RANKS: dict[str, int] = {"NC": 2, "NCL": 3, "NCHW": 4, "NHWC": 4, "HWCN": 4, "NCDHW": 5, "NDHWC": 5}
ND = "ND"
DEFAULT_FORMATS: tuple[str, ...] = (ND,)
_BY_MEMBER = {member: name for name, member in ACL_MEMBERS.items()}


class UnknownFormat(ValueError):
    """A format name that is not one of FORMATS."""


def acl_member(name: str) -> str:
    """The aclFormat member of a spec's format name ("NCHW" -> "ACL_FORMAT_NCHW")."""
    try:
        return ACL_MEMBERS[name]
    except (KeyError, TypeError):
        raise UnknownFormat(f"unknown tensor format {name!r}; the formats are {', '.join(FORMATS)}") from None


def name_of_member(member: str) -> str | None:
    """The spec's name of an aclFormat member, None for one no tensor format stands for."""
    return _BY_MEMBER.get(member)
