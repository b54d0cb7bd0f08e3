"""Which CANN releases the specs describe: `--cann` accepts only those, never an extrapolation."""

from __future__ import annotations

from aclnngen.runtime.versions import VERSION_HELP, CannVersion, is_version

from .consistency import versioned_facts
from .errors import GenerateError
from .model import OpSpec


def described(spec: OpSpec) -> set[str]:
    """The page's own release and every since/until boundary of its facts."""
    found = {spec.cann_version}
    for entity in versioned_facts(spec):
        found |= {v for v in (entity.since, entity.until) if v is not None}
    return found


def check_release(text: str, specs: list[OpSpec]) -> str:
    """`text` when a spec describes that release, else a GenerateError listing those that do."""
    if not is_version(text):
        raise GenerateError(f"--cann {text!r} is not {VERSION_HELP}")
    known = sorted(set().union(*(described(s) for s in specs)), key=CannVersion)
    if not any(CannVersion(text) == CannVersion(v) for v in known):
        raise GenerateError(f"--cann {text}: no spec describes CANN {text}; releases the specs describe: {', '.join(known)}")
    return text
