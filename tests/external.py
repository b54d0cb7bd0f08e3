"""Material that lives outside the repository (`../shared/` beside a checkout): one resolver.

Each kind of material has an environment variable that points to it and a default beside the
checkout. When the material is absent, a test that needs it skips with a reason naming the
variable, so a user's clone with nothing beside it is green; under ACLNNGEN_REQUIRE_EXTERNAL=1
(which .ci/run sets) it fails instead, so CI still runs every such test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repo_paths import REPO

REQUIRE_ENV = "ACLNNGEN_REQUIRE_EXTERNAL"

# name -> (environment variable, default beside the checkout, what it is)
MATERIAL = {
    "reference": (
        "ACLNNGEN_REFERENCE",
        REPO.parent / "shared" / "reference",
        "the folder of reference fact sheets (cann-abi.md, ...)",
    ),
    "seeds": ("ACLNNGEN_SEEDS", REPO.parent / "shared" / "seeds", "the folder of the vendor's seed pages"),
}


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0", "false", "no")


def location(name: str) -> Path:
    """Where material `name` is looked for: its environment variable, else the default."""
    env, default, _ = MATERIAL[name]
    value = os.environ.get(env, "").strip()
    return Path(value) if value else default


def external(name: str, relative: str = "") -> Path:
    """The path of `relative` inside material `name`; skips (or fails when required) if absent."""
    env, _, what = MATERIAL[name]
    path = location(name) / relative if relative else location(name)
    if path.exists():
        return path
    message = (
        f"external material absent: {path} ({what}); set {env} to where it is"
        f" (default: ../shared/{MATERIAL[name][1].name} beside the checkout)"
    )
    if required():
        pytest.fail(f"{message}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(message)
