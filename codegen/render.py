"""The jinja2 environment: strict undefineds, no autoescaping, and filters that make spec text safe.

Spec text never becomes code. Every string from a spec reaches a Python file through `pyrepr`
(a literal), a docstring through `docstring`, and C through `c_string`; identifiers are validated by
the model before they get here.
"""

from __future__ import annotations

import functools
import pprint

import jinja2


_ATOMS = (str, int, float, bool, type(None))


def pyrepr(value) -> str:
    """A Python literal for plain data (dicts keep their order; output is deterministic)."""
    if isinstance(value, _ATOMS) and not (isinstance(value, str) and len(value) > 80):
        return repr(value)  # what pprint gives for a short atom, without its machinery
    return pprint.pformat(value, width=100, sort_dicts=False)


def docstring(text: str) -> str:
    """Text that can sit inside a triple-quoted docstring and mean the same (every quote escaped,
    so neither a triple quote nor a quote next to the closing one can end the string)."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def c_string(text: str) -> str:
    """A C string literal."""
    out = []
    for ch in str(text):
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}\"\"" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def md_cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def indent_lines(lines, width: int = 4) -> str:
    pad = " " * width
    return "\n".join(pad + line if line else line for line in lines)


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aclnngen.codegen", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pyrepr=pyrepr, docstring=docstring, c_string=c_string, md_cell=md_cell, indent_lines=indent_lines)
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
