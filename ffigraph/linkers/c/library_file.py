"""What a graph library's file says about itself before it is loaded.

``dlopen`` runs a library's constructors, so a file is checked before it is handed to the loader
where it came from outside a build (a pickle's bytes) or is being verified: it must be a
complete ELF64 shared object for this machine (every segment the loader maps and every section
lie inside the file: half a library is refused) whose ``.note.ffigraph`` note (codegen's
``ABI_NOTE``, read without loading anything) names the ABI version this ffigraph speaks and
the symbol prefix expected, and which defines ``ffg_library_api`` in its dynamic symbol table.

The note is an ELF note (``Elf64_Nhdr``, owner ``"ffigraph"``, type 1) whose descriptor is the
ABI version (``uint32_t``) then the prefix, NUL-terminated. Imports only the ELF reader.
"""
from __future__ import annotations

import platform
import struct

from ffigraph.linkers.c import elf_runpath

NOTE_OWNER = b"ffigraph\0"
NOTE_ABI = 1          # the note type that carries the ABI version and the prefix
SHT_NOTE, SHT_NOBITS, PT_LOAD, ET_DYN = 7, 8, 1, 3
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_NHDR = struct.Struct("<III")
_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}


class LibraryFileError(ValueError):
    """Not a complete graph library of this ABI for this machine (the message says what is wrong)."""


class NoAbiNoteError(LibraryFileError):
    """A complete shared object without ffigraph's ABI note: built by an ffigraph from before the
    note, or not by ffigraph at all."""


def _align4(n):
    return (n + 3) & ~3


def read_note(data, sections):
    """(ABI version, prefix) from the ffigraph note among ``sections``, or None when there is none."""
    for kind, offset, size in sections:
        if kind != SHT_NOTE:
            continue
        at, end = offset, offset + size
        while at + _NHDR.size <= end:
            namesz, descsz, note_type = _NHDR.unpack_from(data, at)
            name_at = at + _NHDR.size
            desc_at = name_at + _align4(namesz)
            at = desc_at + _align4(descsz)
            if at > end:
                break
            if note_type == NOTE_ABI and data[name_at:name_at + namesz] == NOTE_OWNER and descsz >= 5:
                abi = struct.unpack_from("<I", data, desc_at)[0]
                prefix = data[desc_at + 4:desc_at + descsz].split(b"\0", 1)[0]
                return abi, prefix.decode("ascii", "replace")
    return None


def check_library_bytes(data, abi_version, prefix=None, where="the library", note=True):
    """Refuse (LibraryFileError) ``data`` unless it is a complete ELF64 little-endian shared
    object for this machine whose ffigraph note names ``abi_version`` (and ``prefix``, when given).
    Returns the prefix the note names (None with ``note=False``: the note is not looked for)."""
    size = len(data)
    if size < _EHDR.size or data[:4] != b"\x7fELF":
        raise LibraryFileError("%s is not an ELF file (%s)" % (where, "%d bytes" % size if size < 64 else
                                                                   "starts with %r" % bytes(data[:4])))
    (ident, e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = \
        _EHDR.unpack_from(data, 0)
    if ident[4] != 2 or ident[5] != 1:
        raise LibraryFileError("%s is not an ELF64 little-endian file" % where)
    if e_type != ET_DYN:
        raise LibraryFileError("%s is not a shared object (ELF type %d)" % (where, e_type))
    want = _MACHINES.get(platform.machine().lower())
    if want is not None and machine != want:
        raise LibraryFileError("%s is built for ELF machine %d, this one is %d (%s)"
                               % (where, machine, want, platform.machine()))
    if phentsize != _PHDR.size or shentsize != _SHDR.size or phoff + phnum * phentsize > size \
            or shoff == 0 or shoff + shnum * shentsize > size:
        raise LibraryFileError("%s is incomplete: its program or section headers lie past its end (%d bytes; "
                               "truncated?)" % (where, size))
    for k in range(phnum):
        p_type, _, p_offset, _, _, p_filesz, _, _ = _PHDR.unpack_from(data, phoff + k * phentsize)
        if p_type == PT_LOAD and p_offset + p_filesz > size:
            raise LibraryFileError("%s is incomplete: segment %d ends at byte %d, the file at %d (truncated?)"
                                   % (where, k, p_offset + p_filesz, size))
    sections = []
    for k in range(shnum):
        s = _SHDR.unpack_from(data, shoff + k * shentsize)
        kind, offset, length = s[1], s[4], s[5]
        if kind != SHT_NOBITS and offset + length > size:
            raise LibraryFileError("%s is incomplete: section %d ends at byte %d, the file at %d (truncated?)"
                                   % (where, k, offset + length, size))
        sections.append((kind, offset, length))
    if not note:
        return None
    note = read_note(data, sections)
    if note is None:
        raise NoAbiNoteError("%s carries no ffigraph ABI note: not a library this ffigraph generated "
                               "(or one from before ABI notes)" % where)
    found_abi, found_prefix = note
    if found_abi != abi_version:
        raise LibraryFileError("%s was built for ABI version %d, this ffigraph speaks %d" % (where, found_abi,
                                                                                            abi_version))
    if prefix is not None and found_prefix != prefix:
        raise LibraryFileError("%s is not the library %s (its note names %s)" % (where, prefix, found_prefix))
    return found_prefix


def check_library_file(path, abi_version, prefix=None):
    """``check_library_bytes`` of the file ``path``, and its dynamic symbol table must define
    ``ffg_library_api`` (what a host looks up first). Returns the prefix its note names."""
    with open(path, "rb") as fh:
        data = fh.read()
    found = check_library_bytes(data, abi_version, prefix, where=path)
    try:
        defined = elf_runpath.read(path).defined
    except elf_runpath.ElfError as err:
        raise LibraryFileError(str(err)) from None
    if "ffg_library_api" not in defined:
        raise LibraryFileError("%s does not define ffg_library_api" % path)
    return found
