"""Turning user-chosen names into C identifiers and file names that cannot escape or inject.

Variable and function names are arbitrary strings; in an export they become
parts of C identifiers, macro names and files. Anything outside a small safe
alphabet is replaced, and each kind of name is made unique.
"""
from __future__ import annotations

import re

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")
_NOT_FILE = re.compile(r"[^A-Za-z0-9_.-]")
MAX_LEN = 48


def c_identifier(name, fallback="graph"):
    """``name`` as a C identifier: letters, digits and _, not starting with a digit or _."""
    ident = _NOT_IDENT.sub("_", str(name or ""))[:MAX_LEN].strip("_")
    if not ident:
        return fallback
    if ident[0].isdigit():
        ident = fallback + "_" + ident
    return ident


def file_stem(name, fallback):
    """``name`` as a plain file name without a folder part (no /, no leading dot)."""
    stem = _NOT_FILE.sub("_", str(name or ""))[:MAX_LEN].lstrip(".-")
    return stem or fallback


class UniqueNames:
    """Hands out names, suffixing _2, _3... where one was already given (compared case-blind,
    since some file systems are)."""

    def __init__(self, reserved=()):
        self.taken = {n.lower() for n in reserved}

    def __call__(self, base, suffix=""):
        candidate, n = base, 1
        while (candidate + suffix).lower() in self.taken:
            n += 1
            candidate = "%s_%d" % (base, n)
        self.taken.add((candidate + suffix).lower())
        return candidate + suffix
