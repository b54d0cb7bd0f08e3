"""The helpers of the tests of generated packages (tests/packages.py): a package of a few made-up
ops is generated in the test's own process, one of a catalog's size in a process of its own (the
generator would fork its workers from a test worker that runs threads)."""

from __future__ import annotations

import subprocess

import pytest

import packages
from repo_paths import CUSTOM_SPECS
from aclnngen.codegen import generate as generator


def _refuse(*args, **kwargs):
    raise AssertionError("not this way")


def test_a_few_ops_are_generated_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", _refuse)
    out = packages.generate(CUSTOM_SPECS, tmp_path / "pkg" / "few_ops")
    assert (out / "ops" / "sloped_step_backward.py").is_file()


def test_a_catalog_of_ops_is_generated_in_a_process_of_its_own(tmp_path, monkeypatch):
    count = len(list(CUSTOM_SPECS.rglob("*.yaml")))
    monkeypatch.setattr(generator, "PARALLEL_FROM", count)  # as many as render in worker processes
    monkeypatch.setattr(packages, "aclnngen", _refuse)
    out = packages.generate(CUSTOM_SPECS, tmp_path / "pkg" / "many_ops")
    assert (out / "ops" / "sloped_step_backward.py").is_file()


def test_a_failed_generate_says_what_the_command_printed(tmp_path):
    with pytest.raises(AssertionError, match="no-such-folder"):
        packages.generate(tmp_path / "no-such-folder", tmp_path / "pkg" / "none_ops")
