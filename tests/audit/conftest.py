"""Fixtures of this folder's tests."""

from forkserver import forked_cli  # noqa: F401  (a fixture: the command tests here run forked)
