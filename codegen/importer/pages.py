"""Reading one page from disk, whichever form it has, into PageFacts."""

from __future__ import annotations

import re
from pathlib import Path

from aclnngen.files import FileError, read_text

from ..products import ProductTable
from .facts import PageFacts
from .markdown import read_markdown, read_markdown_apis
from .saved import read_saved

MAX_PAGE_BYTES = 1 << 20  # a vendor page is ~20 KiB; anything 50 times larger is not a page


class PageError(ValueError):
    user_facing = True


def is_markdown(text: str) -> bool:
    """Vendor Markdown has `#` headings or HTML tables; a saved web page has neither."""
    # blanks within the line only: `\s+\S` let one `#` scan every blank line after it
    return bool(re.search(r"^#{1,3}[^\S\n]+\S", text, re.M) or "<table" in text)


def read_page_apis(path: Path, products: ProductTable, release: str | None = None) -> list[PageFacts]:
    """The facts of every API the page documents: one, or each of a shared page's
    (`aclnnX&aclnnInplaceX.md`, see markdown.read_markdown_apis)."""
    text = _read(path)
    if not is_markdown(text):
        found = [read_saved(text, str(path), products)]
    else:
        found = read_markdown_apis(text, str(path), products)
    for facts in found:
        facts.release = release
        facts.category = category_of(path)
    return found


def category_of(path: Path) -> str | None:
    """The vendor's category folder of a page at `<category>/<op>/docs/aclnn<Op>.md`, else None."""
    parts = Path(path).parts
    return parts[-4] if len(parts) >= 4 and parts[-2] == "docs" else None


def _read(path: Path) -> str:
    try:  # a regular file of bounded size: a FIFO, a device or a folder is refused unread
        return read_text(path, what="doc page", limit=MAX_PAGE_BYTES)
    except FileError as exc:
        raise PageError(str(exc)) from None


def read_page(path: Path, products: ProductTable, release: str | None = None) -> PageFacts:
    try:  # a regular file of bounded size: a FIFO, a device or a folder is refused unread
        text = read_text(path, what="doc page", limit=MAX_PAGE_BYTES)
    except FileError as exc:
        raise PageError(str(exc)) from None
    reader = read_markdown if is_markdown(text) else read_saved
    facts = reader(text, str(path), products)
    facts.release = release
    return facts
