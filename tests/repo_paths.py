"""Where the tests find the checkout and their data, one place for every test folder (a test module
sits one or two folders below tests/, so its own `__file__` says nothing reliable about either)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
PAGES = DATA / "pages"
CUSTOM_SPECS = DATA / "custom_specs"
CATEGORY_SPECS = DATA / "category_specs"
CATALOG_SPECS = REPO / "specs" / "catalog"  # the vendor catalog, binding tier (`aclnngen catalog --specs-out`)


def hand_written_tests(tests: Path = TESTS) -> list[Path]:
    """The hand-written test modules below `tests` (any folder but generated/, which the generator writes)."""
    return sorted(p for p in tests.rglob("test_*.py") if "generated" not in p.relative_to(tests).parts)
