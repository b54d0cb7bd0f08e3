"""The bindings behave as the spec's facts say at each release: for every product a spec gains at
a release (`since`), the binding rejects that product at the release before and runs there from
that release on, on the simulator; a release outside every release a spec covers gives one
warning per op naming the nearest known release."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import catalog
import pytest
from catalog import loaded_specs


from aclnngen.verify import cases
from aclnngen.verify.opcheck import binding_args
from aclnngen.runtime import session
from aclnngen.runtime.call import bind
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.products import soc_for_family
from aclnngen.core.releases import CannVersion, as_release, holds_at, known_releases, simulator_spelling, vendor_tag
from aclnngen.runtime.releases import CannReleaseWarning, _warned, check_release
from simtools import no_leaks_around

SPECS = [ls.spec for ls in loaded_specs()]


def _product_gains():
    """(op snake name, family, release before, release gained) for every versioned product fact of
    the catalog's representatives."""
    out = []
    kept = set(catalog.representatives())  # one op per structure
    for spec in SPECS:
        if spec.snake_name not in kept:
            continue
        meta = importlib.import_module(f"aclnngen.generated.meta.{spec.snake_name}").META
        known = [str(v) for v in known_releases(meta)]
        for fact in spec.products:
            if fact.supported and fact.since and known.index(fact.since) > 0:
                out.append((spec.snake_name, fact.family, known[known.index(fact.since) - 1], fact.since))
    return out


GAINS = _product_gains()


def test_some_spec_has_a_versioned_product():
    assert GAINS, "no spec gains a product at a release; this file would test nothing"


def _call(binding, meta, values):
    """Tensors by position, scalars and attributes by keyword (as the generated signatures take them)."""
    positional, keywords = binding_args(meta, values)
    return binding(*positional, **keywords)


def _family_dtype(meta, family, release):
    first = next(p for p in meta["params"] if p["role"] == "input")
    for group in first["dtypes"]:
        if family in group["families"] and holds_at(group.get("since"), group.get("until"), release):
            return group["dtypes"][0]
    raise AssertionError(f"no dtype for {family} at {release}")


@pytest.mark.parametrize("snake,family,before,since", GAINS, ids=lambda v: str(v))
def test_a_product_gained_at_a_release_runs_from_it_and_is_refused_before(snake, family, before, since):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    dtype = _family_dtype(meta, family, since)
    values = dict(cases.make_values(meta, "contiguous", dtype, version=since))
    with no_leaks_around():
        with session.simulated(soc=soc_for_family(family), version=simulator_spelling(before)):
            with pytest.raises(AclnnValidationError) as refused:
                _call(binding, meta, values)
            assert refused.value.check == "product" and refused.value.family == family
        with session.simulated(soc=soc_for_family(family), version=simulator_spelling(since)):
            result = _call(binding, meta, values)
    outputs = result if isinstance(result, tuple) else (result,)
    assert all(np.asarray(o).dtype == np.dtype(dtype) or str(np.asarray(o).dtype) == dtype for o in outputs)


def test_a_dtype_the_family_lacks_at_a_release_is_refused_there():
    """The family gained at a release gets exactly its listed dtypes: one the spec leaves out fails."""
    for snake, family, before, since in GAINS:
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        first = next(p for p in meta["params"] if p["role"] == "input")
        listed = {
            d
            for g in first["dtypes"]
            if family in g["families"] and holds_at(g.get("since"), g.get("until"), since)
            for d in g["dtypes"]
        }
        missing = [d for d in ("bfloat16", "float16", "float32") if d not in listed]
        if not missing:
            continue
        binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
        values = dict(cases.make_values(meta, "contiguous", missing[0], version=since))
        with no_leaks_around(), session.simulated(soc=soc_for_family(family), version=simulator_spelling(since)):
            with pytest.raises(AclnnValidationError) as refused:
                _call(binding, meta, values)
        assert refused.value.check == "dtype"
        return
    pytest.skip("every gained family lists bfloat16, float16 and float32")


def test_vendor_version_strings_map_to_release_spellings():
    order = ["9.0.0-beta.1", "9.0.0-beta.2", "9.0.0-rc.1", "9.0.0", "9.0.1-beta.1", "9.0.1", "9.1.0.pre", "9.1.0"]
    releases = [as_release(v) for v in order]
    assert releases[0] == "9.0.RC1.alpha001" and releases[2] == "9.0.RC1"
    assert sorted(releases, key=CannVersion) == releases  # the vendor's order: beta < rc < release
    assert simulator_spelling(releases[0]) == "9.0.0-beta.1" and simulator_spelling("8.5.0") == "8.5.0"
    assert as_release("8.5.0") == "8.5.0" and as_release("not a version") is None


def test_a_release_before_the_spec_warns_once_per_op_saying_what_to_do(monkeypatch):
    meta = {"name": "DemoOp", "cann_version": "8.0.0", "products": [{"family": "a2", "since": "8.5.0"}]}
    monkeypatch.setattr("aclnngen.runtime.releases._warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_release(meta, "8.1.RC1") is None  # inside 8.0.0 .. 8.5.0
        assert check_release(meta, "9.0.0") is None  # newer than the spec: its newest facts, no warning
        assert check_release(meta, "v9.2.0-beta.1") is None
    with pytest.warns(
        CannReleaseWarning, match=r"CANN v7\.0\.0 precedes .*oldest is v8\.0\.0.*Install CANN v8\.0\.0 or newer"
    ):
        check_release(meta, "7.0.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_release(meta, "7.1.0") is None  # once per op
    with pytest.warns(CannReleaseWarning, match="ACLNNGEN_SIM_CANN=v8.0.0"):
        check_release({**meta, "name": "OtherOp"}, "v7.0.0")


def test_the_binding_warns_once_when_the_installed_release_precedes_its_spec_and_never_when_newer():
    spec = SPECS[0]
    meta = importlib.import_module(f"aclnngen.generated.meta.{spec.snake_name}").META
    oldest, newest = known_releases(meta)[0], known_releases(meta)[-1]
    later = f"{int(str(newest).split('.')[0]) + 1}.0.0"
    earlier = f"{int(str(oldest).split('.')[0]) - 1}.0.0"
    family = next(p.family for p in spec.products if p.supported and p.since is None)
    dtype = _family_dtype(meta, family, str(oldest))
    values = dict(cases.make_values(meta, "contiguous", dtype, version=str(oldest)))
    args = [values.get(p["name"]) for p in meta["params"]]
    _warned.discard(meta["name"])
    fresh = bind(meta)  # a binding caches the release it validated against: a new one has not seen them
    with no_leaks_around(), session.simulated(soc=soc_for_family(family), version=later):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fresh(*args)  # newer than the spec: its newest facts, silently
    with no_leaks_around(), session.simulated(soc=soc_for_family(family), version=earlier):
        with pytest.warns(
            CannReleaseWarning,
            match=f"precedes every release its spec describes .*Install CANN {vendor_tag(str(oldest))}",
        ):
            fresh(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fresh(*args)  # said once
