"""``ffigraph-cache`` / ``python -m ffigraph.cache``: look at and tidy the compile cache::

  list                     one line per entry: key, symbol prefix, size, age, and whether it is sound
  info                     location, number of entries, total size
  show ENTRY               one entry: its library, symbol prefix, ABI version, compiler, size, state
  path ENTRY               the library's path alone (``dlopen $(ffigraph-cache path KEY)``)
  export ENTRY DIR         a folder that a host without Python can use: the library, what it needs,
                           the ABI header, the source and a README (see cmd_export)
  clear                    remove every entry
  purge --older-than DAYS  remove entries older than DAYS (and damaged ones, and abandoned build folders)
  verify [--fix]           re-check every file against what was recorded when it was written (hashes,
                           owner, mode, links); exit status 1 when anything was wrong (--fix: and
                           remove it, so it is rebuilt when next needed)

ENTRY is the start of a key, as ``list`` prints it (at least 6 hex digits), or of a symbol prefix
(``ffg_`` and at least 6 hex digits); it must name one entry. Errors go to standard error (so that
``$(ffigraph-cache path KEY)`` never captures one) with exit status 1.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import sys
import time

from ffigraph.abi import ABI_VERSION, HEADER_NAME, HEADER_PATH
from ffigraph.linkers.c import cache, elf_runpath, relocate, verify

Entry = collections.namedtuple("Entry", "key path size created sound prefix")

MIN_DIGITS = 6   # fewer would match half the cache: a typo should not pick an entry
_HEX = re.compile(r"^[0-9a-f]+$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")
# files beside the ABI header that a host may compile with (written by the export layer; read here
# by path, not imported: this module and ffigraph.export are independent layers)
_EXPORT_C_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export", "c")
OPTIONAL_C_FILES = ("ffg_dlpack.c", "ffg_dlpack.h")


class CliError(Exception):
    """A message for standard error and exit status 1."""


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%.1f %s" % (n, unit) if unit != "B" else "%d B" % n
        n /= 1024.0


def _abi(version):
    if not isinstance(version, int):
        return "unknown"
    return "%d (%d.%d)" % (version, version // 1000, version % 1000)


def _entries():
    return [Entry(key, path, size, created, sound, cache.entry_prefix(path))
            for key, path, size, created, sound in cache.list_entries()]


def resolve(name, entries=None):
    """The one Entry that ``name`` (the start of a key or of a symbol prefix) names; CliError
    (saying which entries match, or that none does) otherwise."""
    text = name.strip().lower()
    by_prefix = text.startswith("ffg_")
    digits = text[4:] if by_prefix else text
    if len(digits) < MIN_DIGITS or not _HEX.match(digits):
        raise CliError("%r names no entry: give at least %d hex digits of a key (as 'list' prints it) or of a "
                       "symbol prefix (ffg_<hex>)" % (name, MIN_DIGITS))
    entries = _entries() if entries is None else entries
    if by_prefix:
        matches = [e for e in entries if e.prefix and e.prefix.startswith(text)]
        what = "symbol prefix"
    else:
        matches = [e for e in entries if e.key.startswith(text)]
        what = "key"
    if not matches:
        raise CliError("no entry of %s has a %s starting with %r (see 'ffigraph-cache list')"
                       % (cache.root(), what, text))
    if len(matches) > 1:
        raise CliError("%r is ambiguous: %d entries have a %s starting with it; give more digits:\n%s"
                       % (name, len(matches), what,
                          "\n".join("  %s  %s" % (e.key, e.prefix or "-") for e in matches)))
    return matches[0]


def _sound_library(entry):
    """The library path of a sound entry; CliError saying why an entry cannot be used."""
    try:
        lib = cache.validate_entry(entry.path, entry.key)
    except (ValueError, cache.CacheSecurityError) as why:
        raise CliError("entry %s is damaged or unsafe (%s); the cache will rebuild it when its graph is next "
                       "compiled ('ffigraph-cache purge --older-than 0' removes it)" % (entry.key, why))
    if lib is None:
        raise CliError("entry %s has just been removed" % entry.key)
    return lib


# ------------------------------------------------------------------ commands


def cmd_list(args, out):
    now = time.time()
    for e in _entries():
        out.write("%s  %-28s  %10s  %6.1f days  %s\n" % (e.key[:16], e.prefix or "-", _size(e.size),
                                                         (now - e.created) / 86400, "ok" if e.sound else "DAMAGED"))
    return 0


def cmd_info(args, out):
    entries = cache.list_entries()
    out.write("location: %s\nentries: %d\ntotal size: %s\n"
              % (cache.root(), len(entries), _size(sum(e[2] for e in entries))))
    damaged = sum(1 for e in entries if not e[4])
    if damaged:
        out.write("damaged entries: %d (run 'verify --fix', 'purge --older-than 0' or 'clear')\n" % damaged)
    leftovers = cache.leftover_builds()
    if leftovers:
        out.write("abandoned build folders: %d in %s (run 'purge --older-than 0')\n"
                  % (len(leftovers), os.path.join(cache.root(), "tmp")))
    return 0


def cmd_show(args, out):
    entry = resolve(args.entry)
    meta = cache.entry_meta(entry.path)
    lib = os.path.join(entry.path, cache.LIB_NAME)
    try:
        cache.validate_entry(entry.path, entry.key)
        state = "ok"
    except (ValueError, cache.CacheSecurityError) as why:
        state = "DAMAGED: %s" % why
    abi = meta.get("abi_version")
    abi_text = _abi(abi)
    if abi != ABI_VERSION:   # the key holds the ABI version: this ffigraph will never load it again
        abi_text += "; this ffigraph speaks %s, so the entry is stale" % _abi(ABI_VERSION)
    lib_size = os.path.getsize(lib) if os.path.isfile(lib) else None
    rows = [("key", entry.key), ("library", lib), ("prefix", entry.prefix or "unknown"), ("abi", abi_text),
            ("compiler", meta.get("compiler", "unknown")),
            ("size", "%s (library %s)" % (_size(entry.size), _size(lib_size) if lib_size is not None else "missing")),
            ("created", "%s (%.1f days ago)" % (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.created)),
                                                 (time.time() - entry.created) / 86400)),
            ("state", state)]
    for label, value in rows:
        out.write("%-9s %s\n" % (label + ":", value))
    return 0


def cmd_path(args, out):
    out.write(_sound_library(resolve(args.entry)) + "\n")
    return 0


README = """\
%(name)s: a graph compiled by ffigraph, exported from its compile cache by 'ffigraph-cache export'.
No Python is needed to use it.

Symbol prefix: %(prefix)s
ABI version:   %(abi)s (declared by ffigraph_abi.h, here)
Cache key:     %(key)s
Compiler:      %(compiler)s

%(entry_text)s

Files:
%(files)s

The library's search path is $ORIGIN: the libraries it needs that are not part of the system lie
in this folder, so the folder may move as a whole. %(name)s.c is the exact source it was
built from, for reading or for building it again (with ffigraph_abi.h beside it).
"""

ENTRY_API = """\
A host finds everything through one symbol:

    void *handle = dlopen("./lib%(name)s.so", RTLD_NOW | RTLD_LOCAL);
    ffg_library_api_fn *entry = (ffg_library_api_fn *)dlsym(handle, "ffg_library_api");

ffg_library_api returns the library's function table (see ffigraph_abi.h). The same functions are
also exported by name, each starting with the prefix:
    %(prefix)s_version, %(prefix)s_run, ..."""

ENTRY_NAMED = """\
This library was built before ffg_library_api existed: a host finds its functions by name, each
starting with the prefix (see ffigraph_abi.h for their types):

    void *handle = dlopen("./lib%(name)s.so", RTLD_NOW | RTLD_LOCAL);
    %(prefix)s_version, %(prefix)s_describe, %(prefix)s_create, %(prefix)s_run, %(prefix)s_destroy"""


def _place(folder, name, source=None, text=None):
    """Write ``folder/name`` from a file or a text, under a temporary name renamed into place."""
    with relocate.placing(folder, name) as tmp:
        if source is not None:
            shutil.copyfile(source, tmp)
        else:
            with open(tmp, "w") as fh:
                fh.write(text)


def cmd_export(args, out):
    """Write ENTRY's library as DIR/lib<name>.so, every non-system library it needs beside it (all
    search paths rewritten to $ORIGIN: nothing names the virtual environment that built it), the
    ABI header, ffg_dlpack.c/.h when this ffigraph has them, the source as <name>.c and README.txt."""
    entry = resolve(args.entry)
    lib = _sound_library(entry)
    meta = cache.entry_meta(entry.path)
    if meta.get("abi_version") != ABI_VERSION:
        # the header copied is this ffigraph's: it would not describe the library, and a host
        # checking the version would refuse it
        raise CliError("entry %s was built against ABI %s, this ffigraph's header is ABI %s; export it with the "
                       "ffigraph that built it, or compile its graph again"
                       % (entry.key, _abi(meta.get("abi_version")), _abi(ABI_VERSION)))
    name = args.name or entry.prefix or "ffg_" + entry.key[:24]
    if not _IDENTIFIER.match(name):
        # a C identifier: safe as a file name everywhere, and the name a build system would give it
        raise CliError("--name %r is not a C identifier (letters, digits and _, not starting with a digit)" % name)
    folder = os.path.abspath(args.dir)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise CliError("%s exists and is not a folder" % folder)
    try:
        p = relocate.plan(lib)
    except elf_runpath.ElfError as why:
        raise CliError("cannot export %s: %s" % (entry.key, why))
    lib_file, source_file = "lib%s.so" % name, "%s.c" % name
    extras = [f for f in OPTIONAL_C_FILES if os.path.isfile(os.path.join(_EXPORT_C_DIR, f))]
    names = relocate.file_names(p, lib_file) + [source_file, HEADER_NAME] + extras + ["README.txt"]
    clashes = sorted(set(n for n in names if names.count(n) > 1))
    if clashes:
        raise CliError("--name %r gives files the same names as libraries the library needs: %s; choose another"
                       % (name, ", ".join(clashes)))
    existing = [n for n in names if os.path.lexists(os.path.join(folder, n))]
    if existing and not args.force:
        raise CliError("%s already holds %s; pass --force to replace them" % (folder, ", ".join(existing)))
    os.makedirs(folder, exist_ok=True)
    try:
        done = relocate.write(p, folder, lib_file)
    except elf_runpath.ElfError as why:
        raise CliError("cannot export %s: %s" % (entry.key, why))
    for written, _ in done:   # the promise of the folder, checked on what was written
        left = [sp.text for sp in elf_runpath.read(os.path.join(folder, written)).search_paths
                if not relocate.is_origin(sp.text)]
        if left:
            raise CliError("%s still has the search path %s after the rewrite" % (written, ", ".join(left)))
    _place(folder, source_file, source=os.path.join(entry.path, cache.SOURCE_NAME))
    _place(folder, HEADER_NAME, source=HEADER_PATH)
    for extra in extras:
        _place(folder, extra, source=os.path.join(_EXPORT_C_DIR, extra))
    prefix = entry.prefix or "unknown"
    fields = dict(name=name, prefix=prefix, key=entry.key, abi=_abi(ABI_VERSION),
                  compiler=meta.get("compiler", "unknown"))
    fields["entry_text"] = (ENTRY_API if "ffg_library_api" in p.info.defined else ENTRY_NAMED) % fields
    top = os.path.basename(lib)
    described = [(lib_file, "the library")]
    described += [(b.name, "needed by %s" % (lib_file if b.needed_by == top else b.needed_by)) for b in p.bundled]
    described += [(source_file, "its source"), (HEADER_NAME, "the ABI header")]
    described += [(extra, "DLPack helpers for hosts") for extra in extras]
    width = max(len(n) for n, _ in described)
    fields["files"] = "\n".join("  %-*s  %s" % (width, n, what) for n, what in described)
    _place(folder, "README.txt", text=README % fields)
    for written, how in done:
        out.write("%s: %s\n" % (os.path.join(folder, written), how))
    for written in [source_file, HEADER_NAME] + extras + ["README.txt"]:
        out.write("%s\n" % os.path.join(folder, written))
    out.write("symbol prefix: %s\n" % prefix)
    return 0


def cmd_clear(args, out):
    out.write("removed %d entries from %s\n" % (cache.clear(), cache.root()))
    return 0


def cmd_purge(args, out):
    if args.older_than < 0:
        out.write("--older-than must be >= 0\n")
        return 2
    out.write("removed %d entries older than %g days from %s\n"
              % (cache.purge(args.older_than), args.older_than, cache.root()))
    builds = cache.clean_tmp(args.older_than * 86400)
    if builds:
        out.write("removed %d abandoned build folder%s from %s\n"
                  % (builds, "" if builds == 1 else "s", os.path.join(cache.root(), "tmp")))
    return 0


def cmd_verify(args, out):
    problems = verify.verify(fix=args.fix)
    for problem in problems:
        out.write("%s: %s%s\n" % (problem.path, problem.why, " (removed)" if problem.fixed else ""))
    fixed = sum(1 for p in problems if p.fixed)
    if not problems:
        out.write("%s: every entry, record and file matches what was recorded\n" % cache.root())
        return 0
    out.write("%d problem%s found in %s%s\n" % (len(problems), "" if len(problems) == 1 else "s", cache.root(),
                                               ", %d removed" % fixed if args.fix else
                                               " (run 'ffigraph-cache verify --fix' to remove them)"))
    return 1


def main(argv=None, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    parser = argparse.ArgumentParser(prog="ffigraph-cache", description="Inspect and tidy ffigraph's compile cache.")
    sub = parser.add_subparsers(dest="command")
    sub.required = True
    sub.add_parser("list", help="list entries").set_defaults(fn=cmd_list)
    sub.add_parser("info", help="location, count and size").set_defaults(fn=cmd_info)
    entry_help = "the start of a key (as 'list' prints it) or of a symbol prefix ffg_..., at least 6 hex digits"
    show = sub.add_parser("show", help="one entry: library, symbol prefix, ABI, compiler, size, state")
    show.add_argument("entry", help=entry_help)
    show.set_defaults(fn=cmd_show)
    path = sub.add_parser("path", help="print the library path of an entry (for scripts)")
    path.add_argument("entry", help=entry_help)
    path.set_defaults(fn=cmd_path)
    export = sub.add_parser("export", help="copy an entry's library, what it needs, the ABI header and its "
                                           "source into a folder that can move")
    export.add_argument("entry", help=entry_help)
    export.add_argument("dir", help="the folder to write (made if needed)")
    export.add_argument("--name", help="the library is written as lib<NAME>.so and its source as NAME.c; a C "
                                       "identifier (default: the symbol prefix)")
    export.add_argument("--force", action="store_true", help="replace files of the same names in DIR")
    export.set_defaults(fn=cmd_export)
    sub.add_parser("clear", help="remove every entry").set_defaults(fn=cmd_clear)
    purge = sub.add_parser("purge", help="remove old entries")
    purge.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    purge.set_defaults(fn=cmd_purge)
    check = sub.add_parser("verify", help="re-hash every entry and file against its record; exit 1 when "
                                          "anything does not match")
    check.add_argument("--fix", action="store_true", help="remove what does not match (it is rebuilt when next "
                                                          "needed)")
    check.set_defaults(fn=cmd_verify)
    args = parser.parse_args(argv)
    try:
        return args.fn(args, out)
    except CliError as why:
        err.write("ffigraph-cache %s: %s\n" % (args.command, why))
        return 1


if __name__ == "__main__":
    sys.exit(main())
