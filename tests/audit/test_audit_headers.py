"""`aclnngen audit --headers DIR`: each spec's prototypes against the declarations of a CANN include
folder, parsed (not grepped): headers with the real prototypes pass; each deliberate corruption (a
renamed parameter, a dropped const, a changed type, a missing function) is reported."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

import catalog
from aclnngen.audit import headers
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.generated import OPS

from external import external

PRODUCTS = load_products()


def _prototypes(snake: str) -> dict[str, str]:
    spec = load_spec(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml", PRODUCTS).spec
    return {"get_workspace_size": spec.prototypes.get_workspace_size, "launch": spec.prototypes.launch}


def _meta(snake: str):
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


def _header_text(prototypes: list[str]) -> str:
    """A header as CANN installs one: include guards, extern "C", the export macro, comments, and
    each declaration broken over lines."""
    body = "\n".join(
        "/**\n * @brief first phase; @domain aclnn_ops_train\n */\n"
        + "ACLNN_API "
        + p.replace(", ", ",\n    ", 2)
        + ";"
        for p in prototypes
    )
    return f'#ifndef X_H_\n#define X_H_\n#include "aclnn/aclnn_base.h"\n#ifdef __cplusplus\nextern "C" {{\n#endif\n\n{body}\n\n#ifdef __cplusplus\n}}\n#endif\n#endif\n'


def _include(tmp_path: Path, texts: dict[str, list[str]]) -> Path:
    folder = tmp_path / "include" / "aclnnop"
    folder.mkdir(parents=True)
    for snake, prototypes in texts.items():
        (folder / f"aclnn_{snake}.h").write_text(_header_text(prototypes), encoding="utf-8")
    return tmp_path / "include"


def _check(include: Path, snakes) -> list:
    found = []
    for snake in snakes:
        f, checked = headers.compare(include, [_meta(snake)], {_meta(snake)["name"]: _prototypes(snake)})
        assert checked == 2
        found += f
    return found


def test_headers_with_the_specs_prototypes_pass(tmp_path):
    ops = catalog.representatives()  # a renamed op's header differs by its names alone
    include = _include(tmp_path, {s: list(_prototypes(s).values()) for s in ops})
    assert _check(include, ops) == []


@pytest.mark.parametrize("snake", catalog.representatives())
@pytest.mark.parametrize("corruption", ["rename", "drop_const", "retype", "missing"])
def test_each_corruption_is_reported(tmp_path, snake, corruption):
    first, launch = _prototypes(snake).values()
    if corruption == "rename":
        bad, expect = first.replace("gradOutput", "gradOut", 1), "renamed"
    elif corruption == "drop_const":
        bad, expect = first.replace("const aclTensor*", "aclTensor*", 1), "const"
    elif corruption == "retype":
        bad, expect = first.replace("uint64_t* workspaceSize", "int64_t* workspaceSize"), "type differs"
    else:
        bad, expect = None, "not declared"
    assert bad != first
    include = _include(tmp_path, {snake: [p for p in (bad, launch) if p]})
    found = _check(include, [snake])
    assert len(found) == 1 and expect in (found[0].subject + found[0].observed), [f.subject for f in found]
    if bad:
        assert re.search(r"aclnn_\w+\.h:\d+", found[0].observed)  # where the declaration is


def test_the_real_prototypes_of_the_abi_fact_sheet_pass(tmp_path):
    """The five ops' declarations as the ABI fact sheet quotes them from the vendor's headers."""
    sheet = external("reference", "cann-abi.md").read_text(encoding="utf-8")
    blocks = re.findall(r"### (aclnn\w+) \(\[NN\][^\n]*\.h\)\n```c\n(.*?)```", sheet, re.S)
    assert len(blocks) >= 5, "the fact sheet quotes the five ops' headers"
    by_symbol = {_meta(s)["symbol"]: s for s in OPS}
    folder = tmp_path / "include" / "aclnnop"
    folder.mkdir(parents=True)
    checked = []
    for symbol, code in blocks:
        if symbol in by_symbol:
            (folder / f"{by_symbol[symbol]}.h").write_text(code, encoding="utf-8")
            checked.append(by_symbol[symbol])
    assert len(checked) >= 5
    assert _check(tmp_path / "include", checked) == []


def test_the_command_reports_a_corrupted_header(forked_cli, tmp_path):
    snake = OPS[0]
    first, launch = _prototypes(snake).values()
    include = _include(tmp_path, {snake: [first.replace("const aclTensor*", "aclTensor*", 1), launch]})
    out = tmp_path / "report"
    done = forked_cli(
        "audit",
        "--source",
        "torch",
        "--ops",
        snake,
        "--headers",
        str(include),
        "--out",
        str(out),
        "--no-pictures",
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    data = json.loads((out / "audit.json").read_text())
    assert any(f["check"] == "header" and "const" in f["subject"] for op in data["ops"] for f in op["findings"])
