"""How much of an op a spec describes: its tier, one concept for the generator, the metadata, the
simulator and the verdict.

- `full`: everything, numerics included: a formula the reference evaluates and an oracle that
  checks it. Every op written by hand so far.
- `binding`: everything but the numerics (products, prototypes, parameters, dtypes, formats, rules,
  return codes, defects): what `aclnngen import` drafts from a page whose formula the formula
  language cannot express. It gets a binding, validators, metadata, an op page and a simulator
  entry point that checks its inputs and answers, but its outputs are not computed: the simulator
  fills them with `POISON_BYTE` and nothing compares them with a reference. A person upgrades the
  op to full tier by adding `formula` and `oracle` (and dropping `tier: binding`).
"""

from __future__ import annotations

FULL = "full"
BINDING = "binding"
TIERS = (FULL, BINDING)
DEFAULT_TIER = FULL

# The spec keys that hold numerics: a full-tier spec needs the first two, a binding-tier spec has
# none of them.
NUMERIC_KEYS = ("formula", "oracle", "arithmetic")
REQUIRED_NUMERIC_KEYS = ("formula", "oracle")

# What the simulator writes into every output of a binding-tier op: recognisable garbage (0xA5 bytes
# read as float32 are -2.9e-16 times 2^..., never a plausible result of every element alike).
POISON_BYTE = 0xA5


def computes(tier: str) -> bool:
    """Whether an op of `tier` has numerics: a reference, an oracle, outputs worth comparing."""
    return tier == FULL


def upgrade_hint(name: str) -> str:
    """How a person takes op `name` from binding tier to full tier, in one sentence."""
    return (
        f"{name} is binding-tier: its outputs are not computed; to upgrade it to full tier, add "
        "`formula` (docs/formula-language.md) and `oracle` to its spec and remove `tier: binding`"
    )
