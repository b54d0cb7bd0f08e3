"""The jinja2 environment: strict undefineds, no autoescaping, and filters that make spec text safe.

Spec text never becomes code. Every string from a spec reaches a Python file through `pyrepr`
(a literal), a docstring through `docstring`, and C through `c_string`; identifiers are validated by
the model before they get here.
"""

from __future__ import annotations

import functools
import math
import pprint
import re

import jinja2


_WIDTH = 100  # of a rendered literal's lines


_ATOMS = (str, int, bool, type(None))  # exact types whose literal holds no float to check


def _finite(value) -> None:
    """A non-finite float has no literal (repr gives `inf`, a NameError): the model rejects it, and
    this refuses to render one should it get through."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} has no Python literal; the spec model must reject it")
    if isinstance(value, dict):
        _finite_items(value.values())
    elif isinstance(value, (list, tuple)):
        _finite_items(value)


def _finite_items(items) -> None:
    for item in items:
        if type(item) not in _ATOMS:  # most items are names and numbers: no call for them
            _finite(item)


def pyrepr(value) -> str:
    """A Python literal for plain data (dicts keep their order; output is deterministic)."""
    if type(value) not in _ATOMS:
        _finite(value)
    text = repr(value)
    if len(text) <= _WIDTH:
        return text  # what pprint gives for anything that fits one line, without its machinery
    return _PRINTER.pformat(value)


class _PlainPrinter(pprint.PrettyPrinter):
    """pprint's layout, with the builtin repr for each piece of plain data it measures: pprint's
    own (`_safe_repr`, Python) walks every subtree again at each level and cost most of rendering
    a META; for these exact types and unsorted dicts both give the same text."""

    _PLAIN = frozenset((dict, list, tuple, str, int, float, bool, type(None)))

    def format(self, obj, context, maxlevels, level):
        if type(obj) in self._PLAIN:
            return repr(obj), True, False
        return super().format(obj, context, maxlevels, level)


_PRINTER = _PlainPrinter(width=_WIDTH, sort_dicts=False)


# Characters that are invisible or reorder text (C0/C1 controls but newline and tab, bidi controls,
# line and paragraph separators): written as escapes, so source shows what the string holds.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape_invisible(text: str) -> str:
    return _INVISIBLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def docstring(text: str) -> str:
    """Text that can sit inside a triple-quoted docstring and mean the same (every quote escaped,
    so neither a triple quote nor a quote next to the closing one can end the string; invisible and
    bidi characters as escapes)."""
    return _escape_invisible(str(text).replace("\\", "\\\\").replace('"', '\\"'))


def comment_text(text: str) -> str:
    """Text that stays inside one line of a Python, C or Markdown comment: only printable ASCII, the
    rest as escapes, and no sequence that ends a C or HTML comment."""
    out = "".join(
        ch if 32 <= ord(ch) < 127 and ch != "\\" else ch.encode("unicode_escape").decode("ascii") for ch in str(text)
    )
    return out.replace("*/", "*\\/").replace("--", "-\\-")


def c_string(text: str) -> str:
    """A C string literal."""
    out = []
    for ch in str(text):
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f'\\x{b:02x}""' for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def md_cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def indent_lines(lines, width: int = 4) -> str:
    pad = " " * width
    return "\n".join(pad + line if line else line for line in lines)


class _QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """A cache that only ever saves time: a folder it cannot read or write is a miss, never an error.

    Bytecode is code: it is loaded only from a folder that is the user's own (checked by
    `_bytecode_cache`) and only from a regular file of the user's own that no group or other can
    write, opened without following a link (aclnngen.files.read_regular with cachedir.foreign)."""

    def load_bytecode(self, bucket) -> None:
        from aclnngen.cachedir import foreign
        from aclnngen.files import FileError, read_regular

        try:
            data = read_regular(
                self._get_cache_filename(bucket),
                what="template bytecode",
                follow_links=False,
                judge=foreign,
                limit=16 * 1024 * 1024,
            )
        except FileError:
            return  # absent, a link, not a regular file or not the user's own: compile afresh
        try:
            bucket.bytecode_from_string(data)
        except Exception:
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        from aclnngen.files import write_atomic

        try:
            write_atomic(
                self._get_cache_filename(bucket),
                bucket.bytecode_to_string(),
                what="template bytecode",
                mode=0o600,
                durable=False,
            )
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (jinja2 keys them by the template's source), so a
    generate that renders one op does not compile every template again; off with the generation
    cache (ACLNNGEN_GENERATE_CACHE=0, or a cache folder that is not the user's own: gencache.enabled)
    or where the cache folder cannot be made."""
    from aclnngen.cachedir import cache_root, make_private, trusted

    from . import gencache

    if not gencache.enabled():
        return None
    try:
        folder = make_private(cache_root() / "jinja")
    except OSError:
        return None
    if not trusted(folder):
        return None
    return _QuietBytecodeCache(str(folder))


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aclnngen.codegen", "templates"),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pyrepr=pyrepr,
        docstring=docstring,
        comment_text=comment_text,
        c_string=c_string,
        md_cell=md_cell,
        indent_lines=indent_lines,
    )
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


def stream(template: str, **context):
    """The text `render` gives, as the template's pieces in turn (a loop over a lazy iterable
    reads one item at a time): for a file too big to hold whole."""
    return environment().get_template(template).generate(**context)
