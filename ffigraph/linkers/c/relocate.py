"""Copy a built library into a folder of its own, with the libraries it needs beside it, so that the
folder can move: nothing in it names an absolute folder to find another library.

A graph library that calls BLAS is linked against numpy's bundled OpenBLAS with an absolute
search path (``DT_RUNPATH``) into the environment that built it; that OpenBLAS in turn needs
libgfortran and libquadmath from the same folder. ``plan(library)`` finds every such library:
each ``DT_NEEDED`` name found in a search folder of the library (its ``DT_RUNPATH`` or
``DT_RPATH``), then, for each one found, the names *it* needs that lie in its own search folders,
in the folder it lies in, or in the graph library's folders, and so on. Libraries of the system
(found elsewhere, in one of the loader's own folders, or glibc's own) are the machine's and are
left out. ``write(plan, folder, filename)`` then puts them beside the copied library, hard-linked
where nothing in them changes, and writes ``$ORIGIN`` over every search path that named
somewhere else.

``$ORIGIN`` in a ``DT_RUNPATH`` serves only the library that carries it: the loader looks for a
dependency's own needs in that dependency's search path. Some bundled libraries have none (the
OpenBLAS of numpy 1.26's wheel needs its libgfortran and says nowhere where it is: inside
Python it works only because numpy has loaded both already). When one of those needs another
bundled library, the search paths are written as ``DT_RPATH`` instead: the loader tries the
``DT_RPATH`` of every object up the chain that loaded a library without a ``DT_RUNPATH``, so the
graph library's ``$ORIGIN`` serves its dependencies too. Otherwise ``DT_RUNPATH`` stays (it lets
``LD_LIBRARY_PATH`` override the folder, as the toolchain's default does).

Only what ``elf_runpath`` reads, ELF64 little-endian, can be relocated.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil

from ffigraph.linkers.c import elf_runpath

ORIGIN = "$ORIGIN"

# glibc and the dynamic loader: always the machine's own, in whatever folder they are found
_LIBC = re.compile(r"^(ld-linux[^/]*|ld64[^/]*|libc|libm|libdl|libpthread|librt|libutil|libresolv|libnsl|"
                   r"libanl|libmvec|libcrypt|libBrokenLocale|libthread_db|libc_malloc_debug)\.so(\.|$)")


def _system_dirs():
    """The loader's own folders (real paths): /lib, /usr/lib, their 64-bit and multiarch
    (``x86_64-linux-gnu``) variants. A library found there belongs to the distribution."""
    dirs = set()
    for base in ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32"):
        if not os.path.isdir(base):
            continue
        dirs.add(os.path.realpath(base))
        for name in os.listdir(base):
            if "-linux-" in name and os.path.isdir(os.path.join(base, name)):
                dirs.add(os.path.realpath(os.path.join(base, name)))
    return dirs


def is_origin(text):
    return text in (ORIGIN, "${ORIGIN}")


def search_dirs(path, info):
    """The folders of ``path``'s search paths, ``$ORIGIN`` expanded against the folder the file
    itself lies in (its real path: where the loader would find its neighbours)."""
    origin = os.path.dirname(os.path.realpath(path))
    dirs = []
    for sp in info.search_paths:
        for part in sp.text.split(":"):
            if not part:
                continue
            part = part.replace("${ORIGIN}", origin).replace(ORIGIN, origin)
            if os.path.isabs(part) and part not in dirs:
                dirs.append(part)
    return dirs


class Bundled(object):
    """A library to put beside the copied one: the name the loader asks for, the file it is,
    what it reads (``elf_runpath.Dynamic``), and who needs it."""

    __slots__ = ("name", "source", "info", "needed_by")

    def __init__(self, name, source, info, needed_by):
        self.name, self.source, self.info, self.needed_by = name, source, info, needed_by


class Plan(object):
    """``library`` (the file), ``info`` (its Dynamic), ``bundled`` ([Bundled], in the order found)
    and ``inherit`` (True: search paths are written as DT_RPATH, see the module doc)."""

    def __init__(self, library, info, bundled, inherit):
        self.library, self.info, self.bundled, self.inherit = library, info, bundled, inherit

    @property
    def tag(self):
        return elf_runpath.DT_RPATH if self.inherit else None


def plan(library):
    """What copying ``library`` into a folder of its own takes (see the module doc)."""
    info = elf_runpath.read(library)
    system = _system_dirs()
    top_dirs = search_dirs(library, info)
    found = {}
    order = []
    queue = [(library, info, top_dirs)]
    while queue:
        obj, obj_info, dirs = queue.pop(0)
        for name in obj_info.needed:
            if name in found or _LIBC.match(name) or "/" in name:
                continue
            source = _find(name, dirs, system)
            if source is None:
                continue   # not in a folder it was told about: the system's (libc, libz, ...)
            dep_info = elf_runpath.read(source)
            found[name] = Bundled(name, source, dep_info, os.path.basename(obj))
            order.append(name)
            # where the loader would look for its own needs, plus where it lies and the graph
            # library's folders (inside Python those were found because numpy loaded them)
            dep_dirs = search_dirs(source, dep_info) + [os.path.dirname(os.path.realpath(source))] + top_dirs
            queue.append((source, dep_info, dep_dirs))
    bundled = [found[name] for name in order]
    names = set(order)
    inherit = any(not b.info.search_paths and names.intersection(b.info.needed) for b in bundled)
    return Plan(library, info, bundled, inherit)


def _find(name, dirs, system):
    for d in dirs:
        candidate = os.path.join(d, name)
        if os.path.isfile(candidate) and os.path.realpath(d) not in system:
            return candidate
    return None


def _needs_rewrite(info, tag):
    """Whether a library's search paths must change: one that is not ``$ORIGIN`` alone, or one
    whose tag is not ``tag`` (when a tag is asked for)."""
    return any(not is_origin(sp.text) or (tag is not None and sp.tag != tag) for sp in info.search_paths)


def file_names(p, filename):
    """Every file ``write`` puts in the folder: ``filename`` and the bundled libraries."""
    return [filename] + [b.name for b in p.bundled]


@contextlib.contextmanager
def placing(folder, name):
    """A temporary path in ``folder`` to write ``name`` at, renamed into place when the block ends
    well (a reader never sees half a file) and removed when it fails."""
    tmp = os.path.join(folder, ".%s.%s.tmp" % (name, os.urandom(8).hex()))
    try:
        yield tmp
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write(p, folder, filename):
    """Put the library (as ``filename``) and what it needs into ``folder``; returns
    [(file name, how: "copied", "linked" or "copied, search path X -> $ORIGIN")].

    Each file is written under a temporary name and renamed into place, so a reader never sees
    half a library; an existing file of the same name is replaced. A file whose search path
    changes is always a copy: patching a hard link would patch the original too (numpy's own
    OpenBLAS, or the cache entry, whose recorded hash would no longer match)."""
    done = []
    items = [(filename, p.library, p.info, True)] + [(b.name, b.source, b.info, False) for b in p.bundled]
    for name, source, info, is_top in items:
        patch = bool(info.search_paths) and _needs_rewrite(info, p.tag)
        with placing(folder, name) as tmp:
            how = "copied"
            if patch or is_top:
                shutil.copyfile(source, tmp)
                mode = os.stat(tmp).st_mode & 0o777
                os.chmod(tmp, mode | (mode & 0o444) >> 2)   # executable where readable, as install(1)
            else:
                try:
                    os.link(os.path.realpath(source), tmp)   # same file system: no copy of a 25 MB BLAS
                    how = "linked"
                except OSError:
                    shutil.copy2(source, tmp)
            if patch:
                old = elf_runpath.rewrite_search_path(tmp, ORIGIN, p.tag)
                how += ", %s" % "; ".join("%s %s -> %s %s" % (sp.kind, sp.text,
                                                               elf_runpath.TAG_NAMES[p.tag or sp.tag], ORIGIN)
                                          for sp in old)
        done.append((name, how))
    return done
