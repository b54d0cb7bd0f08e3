"""Typed errors of the generator. Every problem a user can cause names `file:line` and what was expected."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong in one file, at one line (0 when the file as a whole is wrong)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class SpecError(Exception):
    """A spec (or a shared table under specs/) is malformed. Carries one or more `Problem`s."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems: tuple[Problem, ...] = (problems,) if isinstance(problems, Problem) else tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, path: str | Path, line: int, message: str) -> "SpecError":
        return cls(Problem(str(path), line, message))


class GenerateError(Exception):
    """The generator could not render or write its outputs (not the spec's fault)."""


class FieldProblem(Exception):
    """Raised inside model validators with a location relative to the document root.

    It is deliberately not a ValueError, so pydantic lets it through unchanged and the loader can
    turn its `loc` into a line number.
    """

    def __init__(self, loc: tuple, message: str):
        self.loc = tuple(loc)
        self.message = message
        super().__init__(f"{'.'.join(map(str, loc))}: {message}")


def non_ascii(name: str) -> str:
    """' (its character U+0430 CYRILLIC SMALL LETTER A at position 2 is not ASCII)' for a name
    with a look-alike character, else ''; appended to an identifier error so the reader sees
    which character to retype."""
    for index, ch in enumerate(name):
        if ord(ch) > 127:
            return f" (its character {ch!r}, U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}, at position {index + 1} is not ASCII)"
    return ""
