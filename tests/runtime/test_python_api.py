"""Python conventions of the generated bindings, for each op structure (docs/python-api.md): the signature
rule, `out=` with the outputs' names as aliases, type hints, `__all__`, `__version__`, the types
a tensor may be (bfloat16 tensors of other libraries included), and each op page's example."""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from importlib.metadata import version
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import aclnngen
import catalog
from aclnngen.generated import OPS
from aclnngen.verify import cases, opcheck
from aclnngen.runtime.call import _newest_version
from aclnngen.runtime.errors import AclnnValidationError
from repo_paths import REPO

pytestmark = pytest.mark.needs_runtime


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return meta, binding, opcheck.OpUnderTest(meta, reference=reference, binding=binding, version=_newest_version(meta))


def _values(meta, dtype="float32"):
    return dict(cases.make_values(meta, "contiguous", dtype, version=_newest_version(meta), seed=1))


def _same(a, b) -> bool:
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    return len(a) == len(b) and all(opcheck.same_bits(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))


def test_version_and_py_typed():
    assert aclnngen.__version__ == version("aclnngen")
    assert (Path(aclnngen.__file__).parent / "py.typed").is_file()


@pytest.mark.parametrize("snake", catalog.representatives())
def test_signature_follows_the_rule(snake):
    meta, binding, _ = _op(snake)
    params = inspect.signature(binding).parameters
    positional = [n for n, p in params.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    non_outputs = [p for p in meta["params"] if p["role"] != "output"]
    optional = [
        p["py"]
        for p in non_outputs
        if p["role"] == "optional_scalar" or p.get("optional") or p.get("default") is not None
    ]
    assert positional == [p["py"] for p in non_outputs if p["py"] not in optional] + optional
    keyword_only = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    outputs = [p["py"] for p in meta["params"] if p["role"] == "output" and p["py"] != "out"]
    assert keyword_only == ["out", *outputs, "stream", "validate", "formats"]
    hints = typing.get_type_hints(binding)  # every hint resolves
    assert set(hints) == set(params) | {"return"}
    module = importlib.import_module(f"aclnngen.generated.ops.{snake}")
    assert module.__all__ == [snake]
    assert snake in importlib.import_module("aclnngen.generated.ops").__all__


@pytest.mark.parametrize("snake", catalog.representatives())
def test_positional_keyword_out_and_aliases_agree(snake):
    meta, binding, op = _op(snake)
    values = _values(meta)
    positional, keywords, outputs = op.split(values)
    want = binding(*positional, **keywords)
    by_position = [values[p["name"]] for p in meta["params"] if p["role"] != "output"]
    order = [
        n for n, p in inspect.signature(binding).parameters.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    py_to_c = {p["py"]: p["name"] for p in meta["params"]}
    assert _same(binding(*[values[py_to_c[n]] for n in order]), want)
    assert len(by_position) == len(order)
    fresh = {name: np.full_like(arr, 7) for name, arr in outputs.items()}
    single = len(fresh) == 1
    out = next(iter(fresh.values())) if single else tuple(fresh.values())
    got = binding(*positional, **keywords, out=out)
    assert _same(got, want) and _same(tuple(fresh.values()) if not single else fresh[next(iter(fresh))], want)
    aliases = {k: np.zeros_like(v) for k, v in outputs.items() if k != "out"}
    if aliases:
        assert _same(binding(*positional, **keywords, **aliases), want)
        name = next(iter(aliases))
        with pytest.raises(TypeError, match="given twice"):
            binding(*positional, **keywords, out=out, **{name: aliases[name]})
    if not single:
        with pytest.raises(TypeError, match=f"tuple of {len(fresh)} arrays"):
            binding(*positional, **keywords, out=next(iter(fresh.values())))


def test_hardtanh_takes_min_and_max_positionally_as_aten_does():
    meta, binding, _ = _op("hardtanh_backward")
    g, x = np.ones(5, np.float32), np.linspace(-2, 2, 5, dtype=np.float32)
    assert _same(binding(g, x, -1.0, 1.0), binding(g, x, min=-1.0, max=1.0))
    assert list(binding(g, x, -1.0, 1.0)) == [0, 0, 1, 0, 0]


@pytest.mark.parametrize("bad", [[1.0, 2.0], 1.5, 3, "x", object()], ids=["list", "float", "int", "str", "object"])
@pytest.mark.parametrize("validate", [True, False])
def test_a_non_tensor_is_a_type_error_naming_the_accepted_types(bad, validate):
    snake = OPS[0]
    meta, binding, op = _op(snake)
    positional, keywords, _ = op.split(_values(meta))
    positional[0] = bad
    with pytest.raises(TypeError) as err:
        binding(*positional, **keywords, validate=validate)
    text = str(err.value)
    assert "must be a tensor" in text and "__dlpack__" in text and "NumPy array" in text and type(bad).__name__ in text
    if validate:
        assert isinstance(err.value, AclnnValidationError) and err.value.status == 161002


@pytest.mark.needs_torch
@pytest.mark.parametrize("snake", catalog.representatives())
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_tensors_work_like_numpy_arrays(snake, dtype):
    torch = pytest.importorskip("torch")
    meta, binding, op = _op(snake)
    from aclnngen.core.rules import supported_dtypes

    first = next(p["name"] for p in meta["params"] if p["role"] == "input")
    if dtype not in supported_dtypes(meta, first, "a2", _newest_version(meta)):
        pytest.skip(f"{meta['name']} takes no {dtype} on A2")
    values = _values(meta, dtype)
    positional, keywords, _ = op.split(values)
    want = binding(*positional, **keywords)

    def to_torch(a):
        as_float = torch.from_numpy(np.ascontiguousarray(a.astype(np.float32)))
        return as_float.to(torch.bfloat16) if a.dtype == ml_dtypes.bfloat16 else torch.from_numpy(a.copy())

    got = binding(*[to_torch(a) for a in positional], **keywords)
    assert _same(got, want)


def test_a_strided_bfloat16_torch_tensor_is_read_with_its_strides():
    torch = pytest.importorskip("torch")
    meta, binding, op = _op(OPS[0])
    values = _values(meta, "bfloat16")
    positional, keywords, _ = op.split(values)
    want = binding(*positional, **keywords)

    def strided(a):
        dims = tuple(reversed(range(a.ndim)))
        return (
            torch.from_numpy(np.ascontiguousarray(a.astype(np.float32).transpose(dims)))
            .to(torch.bfloat16)
            .permute(*dims)
        )

    transposed = [strided(a) for a in positional]
    assert any(not t.is_contiguous() for t in transposed)
    assert _same(binding(*transposed, **keywords), want)


def _example(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    found = re.search(r"For example:\n\n```python\n(.*?)```", text, re.S)
    assert found, f"{page.name} shows no example"
    return found.group(1)


@pytest.mark.parametrize("snake", catalog.representatives())
def test_each_op_page_shows_the_signature_and_a_working_example(snake):
    meta, binding, _ = _op(snake)
    page = REPO / "docs" / "ops" / f"{snake}.md"
    text = page.read_text(encoding="utf-8")
    shown = re.search(r"## Python\n\n```python\n(.*?)\n```", text, re.S).group(1)
    assert shown.startswith(f"{snake}(") and all(name in shown for name in inspect.signature(binding).parameters)
    scope: dict = {}
    exec(compile(_example(page), str(page), "exec"), scope)  # noqa: S102 - our own generated page
    results = [v for k, v in scope.items() if k in {p["py"] for p in meta["params"] if p["role"] == "output"}]
    assert results and all(isinstance(r, np.ndarray) for r in results)
