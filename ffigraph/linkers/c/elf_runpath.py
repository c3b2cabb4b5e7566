"""Read an ELF shared library's dynamic section, and rewrite its library search path in place.

A graph library that calls BLAS is linked with an absolute ``DT_RUNPATH`` into the virtual
environment that built it (numpy's ``numpy.libs``). A folder exported for a host without Python
must not point there: it carries the libraries beside the graph library and says ``$ORIGIN``
instead. This module does that rewrite by hand, with ``struct`` alone, so that exporting needs
neither patchelf nor any other tool, and so that it is obvious what changes: nothing but the
bytes of the old search path string (and, when asked, the tag of its dynamic entry).

The new string is written over the old one inside ``.dynstr`` and the rest of the old one is
filled with NUL bytes; no section moves or grows, which is why the new string may never be
longer than the old one. Only ELF64 little-endian (Linux on x86-64 and aarch64) is read; any
other file raises ``ElfError``. A leaf module: it imports nothing of ffigraph, so any layer
may use it.
"""
from __future__ import annotations

import struct

# d_tag values (elf.h) of the dynamic entries read here
DT_NULL = 0
DT_NEEDED = 1
DT_STRTAB = 5
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29
# every tag whose d_val is an offset into the dynamic string table: a rewrite must not clobber
# a string that one of them still names (the linker may share a string's tail between entries)
_STRING_TAGS = frozenset((DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH,
                          0x7ffffffd,    # DT_AUXILIARY
                          0x7fffffff,    # DT_FILTER
                          0x6ffffefa,    # DT_CONFIG
                          0x6ffffefb,    # DT_DEPAUDIT
                          0x6ffffefc))   # DT_AUDIT
TAG_NAMES = {DT_RPATH: "RPATH", DT_RUNPATH: "RUNPATH"}

SHT_DYNSYM = 11
SHT_DYNAMIC = 6
SHT_GNU_VERDEF = 0x6ffffffd
SHT_GNU_VERNEED = 0x6ffffffe
SHN_UNDEF = 0

_EHDR = struct.Struct("<HHIQQQIHHHHHH")     # Elf64_Ehdr after e_ident
_SHDR = struct.Struct("<IIQQQQIIQQ")        # Elf64_Shdr
_DYN = struct.Struct("<qQ")                 # Elf64_Dyn
_SYM = struct.Struct("<IBBHQQ")             # Elf64_Sym
_VERNEED = struct.Struct("<HHIII")          # Elf64_Verneed
_VERNAUX = struct.Struct("<IHHII")          # Elf64_Vernaux
_VERDEF = struct.Struct("<HHHHIII")         # Elf64_Verdef
_VERDAUX = struct.Struct("<II")             # Elf64_Verdaux


class ElfError(ValueError):
    """Not an ELF64 little-endian file, damaged, or a rewrite that cannot be done in place."""


class SearchPath(object):
    """One DT_RUNPATH or DT_RPATH entry: its tag, the index of its dynamic entry, where its string
    starts in the string table, and the string (colon-separated folders)."""

    __slots__ = ("tag", "index", "offset", "text")

    def __init__(self, tag, index, offset, text):
        self.tag, self.index, self.offset, self.text = tag, index, offset, text

    @property
    def kind(self):
        return TAG_NAMES[self.tag]

    def __repr__(self):
        return "SearchPath(%s, %r)" % (self.kind, self.text)


class Dynamic(object):
    """What the dynamic loader reads of a library: ``needed`` (DT_NEEDED names, in order),
    ``soname``, ``search_paths`` ([SearchPath]) and ``defined`` (the names of the symbols it
    exports). The file offsets kept here are what ``rewrite_search_path`` patches."""

    def __init__(self, path):
        self.path = path
        self.needed = []
        self.soname = None
        self.search_paths = []
        self.defined = []
        self._dynamic_offset = None   # file offset of the dynamic array
        self._strtab_offset = None    # file offset and size of its string table
        self._strtab_size = 0
        self._string_refs = []        # (offset into the string table, what refers to it)


def _read_at(fh, offset, size, what):
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError("%s: truncated (%s lies past the end of the file)" % (fh.name, what))
    return data


def _cstring(table, offset, path):
    if offset >= len(table):
        raise ElfError("%s: a string offset (%d) lies outside the dynamic string table" % (path, offset))
    end = table.find(b"\0", offset)
    if end < 0:
        raise ElfError("%s: an unterminated string in the dynamic string table" % path)
    return table[offset:end].decode("utf-8", "surrogateescape")


def _sections(fh, path):
    ident = _read_at(fh, 0, 16, "the ELF identification")
    if ident[:4] != b"\x7fELF":
        raise ElfError("%s is not an ELF file" % path)
    if ident[4] != 2 or ident[5] != 1:   # EI_CLASS, EI_DATA
        raise ElfError("%s is ELF%s %s-endian; only ELF64 little-endian libraries (Linux x86-64, "
                       "aarch64) can be read and rewritten"
                       % (path, {1: "32", 2: "64"}.get(ident[4], "?"), {1: "little", 2: "big"}.get(ident[5], "?")))
    header = _EHDR.unpack(_read_at(fh, 16, _EHDR.size, "the ELF header"))
    shoff, shentsize, shnum = header[5], header[10], header[11]
    if shoff == 0:
        raise ElfError("%s has no section headers (stripped with sstrip?); its dynamic section cannot be "
                       "located" % path)
    if shentsize != _SHDR.size:
        raise ElfError("%s: unexpected section header size %d" % (path, shentsize))
    if shnum == 0:   # extended numbering: the count is section 0's sh_size
        shnum = _SHDR.unpack(_read_at(fh, shoff, _SHDR.size, "section header 0"))[5]
    raw = _read_at(fh, shoff, shnum * _SHDR.size, "the section headers")
    # (type, addr, offset, size, link, info, entsize) of each section; names are not needed
    return [(s[1], s[3], s[4], s[5], s[6], s[7], s[9]) for s in _SHDR.iter_unpack(raw)]


def read(path):
    """The ``Dynamic`` of the ELF64 little-endian file ``path``; ElfError when it is not one or
    it has no dynamic section."""
    info = Dynamic(path)
    with open(path, "rb") as fh:
        sections = _sections(fh, path)
        dynamic = [s for s in sections if s[0] == SHT_DYNAMIC]
        if not dynamic:
            raise ElfError("%s has no dynamic section (not a shared library?)" % path)
        _, _, dyn_offset, dyn_size, link, _, _ = dynamic[0]
        if link >= len(sections):
            raise ElfError("%s: the dynamic section names a string table that does not exist" % path)
        _, str_addr, str_offset, str_size, _, _, _ = sections[link]
        table = _read_at(fh, str_offset, str_size, "the dynamic string table")
        entries = list(_DYN.iter_unpack(_read_at(fh, dyn_offset, dyn_size - dyn_size % _DYN.size,
                                                 "the dynamic section")))
        info._dynamic_offset, info._strtab_offset, info._strtab_size = dyn_offset, str_offset, str_size
        for index, (tag, value) in enumerate(entries):
            if tag == DT_NULL:
                break
            if tag == DT_STRTAB and value != str_addr:
                # the loader reads DT_STRTAB, the patch writes the section: they must be one table
                raise ElfError("%s: DT_STRTAB (0x%x) is not the dynamic section's linked string table (0x%x)"
                               % (path, value, str_addr))
            if tag in _STRING_TAGS:
                info._string_refs.append((value, "dynamic entry %d" % index))
            if tag == DT_NEEDED:
                info.needed.append(_cstring(table, value, path))
            elif tag == DT_SONAME:
                info.soname = _cstring(table, value, path)
            elif tag in (DT_RPATH, DT_RUNPATH):
                info.search_paths.append(SearchPath(tag, index, value, _cstring(table, value, path)))
        for kind, _, offset, size, s_link, s_info, _ in sections:
            if s_link != link or kind not in (SHT_DYNSYM, SHT_GNU_VERNEED, SHT_GNU_VERDEF):
                continue
            data = _read_at(fh, offset, size, "a symbol or version section")
            if kind == SHT_DYNSYM:
                _read_symbols(info, data, table, path)
            elif kind == SHT_GNU_VERNEED:
                _read_verneed(info, data, s_info)
            else:
                _read_verdef(info, data, s_info)
    return info


def _read_symbols(info, data, table, path):
    for n, (name, st_info, other, shndx, _, _) in enumerate(_SYM.iter_unpack(data[:len(data) - len(data) % _SYM.size])):
        if name:
            info._string_refs.append((name, "symbol %d" % n))
        binding, visibility = st_info >> 4, other & 3
        # defined, global/weak/unique, default or protected visibility: what dlsym can find
        if name and shndx != SHN_UNDEF and binding in (1, 2, 10) and visibility in (0, 3):
            info.defined.append(_cstring(table, name, path))


def _read_verneed(info, data, count):
    at = 0
    for _ in range(count):
        if at + _VERNEED.size > len(data):
            break
        _, cnt, file_name, aux, nxt = _VERNEED.unpack_from(data, at)
        info._string_refs.append((file_name, "version need"))
        a = at + aux
        for _ in range(cnt):
            if a + _VERNAUX.size > len(data):
                break
            _, _, _, name, anext = _VERNAUX.unpack_from(data, a)
            info._string_refs.append((name, "version need aux"))
            if not anext:
                break
            a += anext
        if not nxt:
            break
        at += nxt


def _read_verdef(info, data, count):
    at = 0
    for _ in range(count):
        if at + _VERDEF.size > len(data):
            break
        _, _, _, cnt, _, aux, nxt = _VERDEF.unpack_from(data, at)
        a = at + aux
        for _ in range(cnt):
            if a + _VERDAUX.size > len(data):
                break
            name, anext = _VERDAUX.unpack_from(data, a)
            info._string_refs.append((name, "version definition"))
            if not anext:
                break
            a += anext
        if not nxt:
            break
        at += nxt


def rewrite_search_path(path, new="$ORIGIN", tag=None):
    """Overwrite every DT_RUNPATH / DT_RPATH string of ``path`` with ``new``, in place; with ``tag``
    (DT_RUNPATH or DT_RPATH), give each such entry that tag too. Returns the old SearchPaths.

    ElfError, before anything is written, when the file has no search path, when an old string is
    shorter than ``new`` (there is no room for it: the table cannot grow in place), or when another
    name of the table shares bytes with an old string (overwriting would rename it)."""
    if tag not in (None, DT_RPATH, DT_RUNPATH):
        raise ValueError("tag must be DT_RPATH or DT_RUNPATH, not %r" % (tag,))
    encoded = new.encode("utf-8")
    if b"\0" in encoded:
        raise ValueError("a search path cannot hold a NUL byte")
    info = read(path)
    if not info.search_paths:
        raise ElfError("%s has no DT_RUNPATH or DT_RPATH entry to rewrite" % path)
    writes = []
    for sp in info.search_paths:
        old_len = len(sp.text.encode("utf-8", "surrogateescape"))
        if old_len < len(encoded):
            raise ElfError("%s: its %s %r is shorter than %r (%d < %d bytes); a search path is rewritten "
                           "in place and cannot grow" % (path, sp.kind, sp.text, new, old_len, len(encoded)))
        own = set(p.offset for p in info.search_paths)
        for ref, what in info._string_refs:
            # a name starting inside the old string (its tail shared by the linker), or at its start
            # without being one of the search paths themselves, would change with it
            if sp.offset <= ref < sp.offset + old_len and not (ref in own and ref == sp.offset):
                raise ElfError("%s: the %s string is shared with %s; it cannot be rewritten in place"
                               % (path, sp.kind, what))
        writes.append((info._strtab_offset + sp.offset, encoded + b"\0" * (old_len - len(encoded))))
        if tag is not None and tag != sp.tag:
            writes.append((info._dynamic_offset + sp.index * _DYN.size, struct.pack("<q", tag)))
    with open(path, "r+b") as fh:
        for offset, data in writes:
            fh.seek(offset)
            fh.write(data)
    return info.search_paths
