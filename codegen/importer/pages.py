"""Reading one page from disk, whichever form it has, into PageFacts."""

from __future__ import annotations

import re
from pathlib import Path

from ..products import ProductTable
from .facts import PageFacts
from .markdown import read_markdown
from .saved import read_saved

MAX_PAGE_BYTES = 4 << 20  # a vendor page is ~20 KiB; anything far larger is not a page


class PageError(ValueError):
    user_facing = True


def is_markdown(text: str) -> bool:
    """Vendor Markdown has `#` headings or HTML tables; a saved web page has neither."""
    return bool(re.search(r"^#{1,3}\s+\S", text, re.M) or "<table" in text)


def read_page(path: Path, products: ProductTable, release: str | None = None) -> PageFacts:
    try:
        if path.stat().st_size > MAX_PAGE_BYTES:
            raise PageError(f"{path}: {path.stat().st_size} bytes is too large for a doc page")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PageError(f"{path}: cannot read the page ({exc.__class__.__name__}: {exc})") from None
    reader = read_markdown if is_markdown(text) else read_saved
    facts = reader(text, str(path), products)
    facts.release = release
    return facts
