"""The committed vendor catalog (specs/catalog, written by `aclnngen catalog --specs-out`) on the
simulator, every op, a sample of cases each: one package generated from every catalog spec for the
module, then per op each null-pointer case of its plan twice: through the validator (status 161001 naming the
parameter) and, for an input, with `validate=False` through the simulator's entry point, which is
the vendor's symbol with its header's signature (so cffi finds `aclnnXxxGetWorkspaceSize` for every
catalog API, and its C checks answer). Generic over the catalog's metadata, as PyTorch's OpInfo
tests are over op_db; each test names every op that fails. The ops' binding cases are not in the
suite yet (docs/catalog-storage.md says which fail)."""

from __future__ import annotations

import importlib

import pytest

from packages import generated_package
from repo_paths import CATALOG_SPECS
from aclnngen.codegen import testplan
from aclnngen.codegen.loader import load_products
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError
from aclnngen.verify import cases, opcheck

PACKAGE = "catalog_ops"
PRODUCTS = load_products()
SPEC_PATHS = sorted(CATALOG_SPECS.rglob("*.yaml"))

pytestmark = [
    pytest.mark.skipif(not SPEC_PATHS, reason="no catalog specs under specs/catalog"),
    pytest.mark.slow(reason="generates a package of every catalog op and builds their simulator entry points"),
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """(OpUnderTest, test plan) per catalog op, from one package generated from every catalog spec."""
    root = tmp_path_factory.mktemp("catalog")
    # the catalog's folder as it is (<repository>/<category>/*.yaml), its tables the built-in ones
    with generated_package(root, CATALOG_SPECS, PACKAGE):
        ops = []
        for snake in importlib.import_module(PACKAGE).OPS:  # from META alone: no spec loaded again
            meta = importlib.import_module(f"{PACKAGE}.meta.{snake}").META
            binding = getattr(importlib.import_module(f"{PACKAGE}.ops.{snake}"), snake)
            plan = testplan.null_plan(meta, PRODUCTS)
            ops.append((opcheck.OpUnderTest(meta, None, binding, plan["version"]), plan))
        session.reset()  # the package's entry points, registered by the imports, get built in
        yield ops


def _failures(catalog, check) -> list[str]:
    found = []
    for op, plan in catalog:
        try:
            check(op, plan)
        except Exception as exc:  # noqa: BLE001 - every op's failure is named, not the first only
            found.append(f"{op.name}: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}")
    return found


def test_every_catalog_spec_is_binding_tier_and_generated(catalog):
    assert len(catalog) == len(SPEC_PATHS)
    assert all(not op.typed.computes for op, _ in catalog)


def _nulls(op, plan) -> None:
    made: dict[str, dict] = {}  # a family's values, made once: each call is refused before it writes
    for case in plan["nulls"]:
        family, param = case["family"], case["param"]
        opcheck.check_null(op, family, param)
        if op.typed.param(param).role == "output":
            continue  # a None output the binding allocates: NULL never reaches C
        if family not in made:
            made[family] = dict(
                cases.make_values(op.meta, "contiguous", "float32", version=op.version, family=family, own_dtypes=True)
            )
        values = {**made[family], param: None}
        positional, keywords, _ = op.split(values)
        with session.simulated(family=family, version=op.version):
            try:
                op.binding(*positional, **keywords, validate=False)
            except AclnnStatusError as exc:
                assert exc.status == 161001, f"{param} NULL on the simulator: {exc}"
            else:
                raise AssertionError(f"{param} NULL: the simulator's entry point accepted it")


def test_every_catalog_op_refuses_each_null_pointer_in_the_validator_and_the_simulator(catalog):
    failures = _failures(catalog, _nulls)
    assert not failures, f"{len(failures)} ops:\n" + "\n".join(failures)
