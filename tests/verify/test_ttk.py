"""TTK case files (aclnngen/verify/ttk.py): an op's cases (one op per structure) written in the
vendor's tool's ACLNN columns read back as the same cases, rebuilt into calls with the same
layouts, and run by `aclnngen run --cases` on the simulator; malformed files are one line naming
where."""

from __future__ import annotations

import json

import catalog
import numpy as np
import pytest

from aclnngen.codegen import cli
from aclnngen.runtime.call import _newest_version
from aclnngen.verify import ttk


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The case file of one op per structure (tests/catalog.py: a renamed op's rows differ by the
    name alone) and of the plain op, written once by the command a user runs."""
    folder = tmp_path_factory.mktemp("ttk")
    ops = dict.fromkeys([*catalog.representatives(), catalog.PLAIN])
    assert cli.main(["export", "--ttk", str(folder), "--ops", *ops]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{catalog.meta(s)['symbol']}.csv" for s in ops)
    return folder


def _file(folder, snake):
    return folder / f"{catalog.meta(snake)['symbol']}.csv"


@pytest.mark.parametrize("snake", catalog.representatives())
def test_export_then_read_gives_the_same_cases(exported, snake):
    meta = catalog.meta(snake)
    planned = ttk.op_cases(meta, _newest_version(meta))
    assert planned, f"{snake}: no case TTK could run"
    assert ttk.read(_file(exported, snake)) == planned


@pytest.mark.parametrize("snake", catalog.representatives())
def test_a_row_rebuilds_its_layout_ranges_and_scalars(exported, snake):
    meta = catalog.meta(snake)
    tensors = catalog.names(meta, "input", "output")
    for case in ttk.read(_file(exported, snake)):
        values = ttk.values_of(meta, case, seed=1)
        for i, name in enumerate(tensors):
            array = values[name]
            assert array.shape == case.shapes[i] and array.dtype.name == case.dtypes[i], (case.name, name)
            strides, offset, storage = ttk._layout(array)
            if array.size > 1:
                assert (strides, offset) == (case.strides[i], case.offsets[i]), (case.name, name)
            assert storage[0] <= case.storage_shapes[i][0], (case.name, name)
        for name, (low, high) in zip(catalog.names(meta, "input"), case.input_ranges):
            data = np.asarray(values[name], dtype=np.float64)
            if data.size and low is not None:
                assert low <= data.min() and data.max() <= high, (case.name, name)
        for name in catalog.names(meta, "scalar", "optional_scalar", "attribute"):
            assert values[name] == case.attributes[name], (case.name, name)


def _run_cases(capsys, path, *extra):
    code = cli.main(["run", "--cases", str(path), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_an_exported_file_of_a_full_tier_op_runs_on_the_simulator(exported, capsys):
    code, data = _run_cases(capsys, _file(exported, catalog.PLAIN))
    assert code == 0 and data["ok"] and data["failed"] == 0 and data["matched"] > 0, data
    assert all(r["status"] == "ok" for r in data["rows"] if r["match"]), data["rows"]
    assert {r["case"] for r in data["rows"]} == {c.name for c in ttk.read(_file(exported, catalog.PLAIN))}


def test_a_case_outside_its_pairs_or_refused_fails(exported, tmp_path, capsys, monkeypatch):
    cases = ttk.read(_file(exported, catalog.PLAIN))
    ok = next(c for c in cases if c.name.endswith("float32_contiguous") and c.socs and "Ascend910B2" in c.socs)
    refused = ttk.TtkCase(**{**ok.__dict__, "name": "refused", "dtypes": ("int64",) * len(ok.dtypes)})
    unknown = ttk.TtkCase(**{**ok.__dict__, "name": "unknown", "api": "aclnnNoSuchThing"})
    path = ttk.write([ok, refused, unknown], tmp_path / "mixed.csv")
    code, data = _run_cases(capsys, path)
    by_case = {r["case"]: r for r in data["rows"]}
    assert code == 1 and data["matched"] == 1 and data["failed"] == 2, data
    assert by_case["refused"]["status"].startswith("error: AclnnValidationError")
    assert "no op of aclnngen.generated has this API" in by_case["unknown"]["status"]
    # a reference that answers otherwise is found: the comparison can fail
    from aclnngen.verify import opcheck

    original = opcheck.OpUnderTest.run_reference
    monkeypatch.setattr(
        opcheck.OpUnderTest, "run_reference", lambda self, v, **o: tuple(r + 1 for r in original(self, v, **o))
    )
    code, data = _run_cases(capsys, ttk.write([ok], tmp_path / "one.csv"))
    assert code == 1 and data["rows"][0]["status"] == "outside the case's precision_tolerances"


def test_a_hand_written_row_with_one_dtype_for_every_tensor_runs(tmp_path, capsys):
    meta = catalog.meta(catalog.PLAIN)
    n = len(catalog.names(meta, "input", "output"))
    shapes = ", ".join(["(2, 3)"] * n)
    path = tmp_path / "hand.csv"
    path.write_text(
        "testcase_name,api_name,tensor_view_shapes,tensor_dtypes,is_enabled\n"
        f'mine,{meta["symbol"]},"({shapes})","(\'float32\',)",True\n'
        f'off,{meta["symbol"]},"({shapes})","(\'float32\',)",False\n'
        "\n",
        encoding="utf-8",
    )
    (case,) = ttk.read(path)
    assert case.dtypes == ("float32",) * n and case.formats == ("ND",) * n
    code, data = _run_cases(capsys, path)
    assert code == 0 and data["matched"] == 1, data


@pytest.mark.parametrize(
    "header, row, message",
    [
        ("testcase_name,tensor_view_shapes", "a,((1,),)", "no api_name column"),
        ("api_name,tensor_view_shapes,tensor_dtypes", 'aclnnX,"((1,),)",__import__("os")', "column 'tensor_dtypes'"),
        ("api_name,tensor_view_shapes,tensor_dtypes", 'aclnnX,"(((1,),(2,)),)","(\'float32\',)"', "tensor list"),
        ("api_name,tensor_view_shapes,tensor_dtypes", "aclnnX,\"((1,),(2,))\",\"('float32','int8','x')\"", "3 entries"),
        ("api_name,tensor_view_shapes,tensor_dtypes", 'aclnnX,"((1,),)","(\'float99\',)"', "unknown dtype"),
        ("api_name,tensor_view_shapes,tensor_dtypes", "aclnnX,,\"('float32',)\"", "required and empty"),
        (
            "api_name,tensor_view_shapes,tensor_dtypes,output_tensor_indexes",
            'aclnnX,"((1,),)","(\'int8\',)",(4,)',
            "indexes",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_where(tmp_path, capsys, header, row, message):
    path = tmp_path / "bad.csv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    with pytest.raises(ttk.TtkCaseError, match=message) as info:
        ttk.read(path)
    assert str(info.value).startswith(f"{path}:")
    assert cli.main(["run", "--cases", str(path)]) == 1
    err = capsys.readouterr().err
    assert message.split("'")[0] in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_soc_filter_selects_names_prefixes_and_exclusions():
    case = ttk.TtkCase("c", "aclnnX", (), (), (), (), (), (), (), socs=("Ascend910B1", "Ascend950PR_"))
    assert ttk.runs_on(case, "Ascend910B1") and ttk.runs_on(case, "Ascend950PR_9599")
    assert not ttk.runs_on(case, "Ascend910B") and not ttk.runs_on(case, None)
    excluding = ttk.TtkCase("c", "aclnnX", (), (), (), (), (), (), (), socs=("-Ascend310P1",))
    assert ttk.runs_on(excluding, "Ascend910B1") and not ttk.runs_on(excluding, "Ascend310P1")


def test_a_binding_tier_package_exports_and_runs_its_cases_by_status(tmp_path, capsys):
    """A catalog op (binding tier: no reference) of a generated package: its case file runs, each
    case judged by the call's status; a case the spec refuses fails."""
    from packages import generated_package
    from repo_paths import DATA

    with generated_package(tmp_path, DATA / "binding_specs", "ttk_band_ops"):
        assert cli.main(["export", "--ttk", str(tmp_path / "ttk"), "--package", "ttk_band_ops"]) == 0
        capsys.readouterr()
        path = tmp_path / "ttk" / "aclnnLowerBand.csv"  # the package's other made-up ops aside
        cases = ttk.read(path)
        assert all(c.tolerances is None for c in cases)  # nothing to compare: no pairs written
        code, data = _run_cases(capsys, path, "--package", "ttk_band_ops")
        assert code == 0 and data["matched"] == len(cases) and data["failed"] == 0, data
        assert all(r["status"].startswith("ok (no reference") for r in data["rows"])
        refused = ttk.TtkCase(
            **{**cases[0].__dict__, "name": "refused", "dtypes": ("complex128",) * len(cases[0].dtypes)}
        )
        code, data = _run_cases(capsys, ttk.write([refused], tmp_path / "bad.csv"), "--package", "ttk_band_ops")
        assert code == 1 and data["rows"][0]["status"].startswith("error:"), data
