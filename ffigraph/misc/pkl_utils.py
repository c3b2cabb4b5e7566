"""Theano's and PyTensor's ``misc.pkl_utils``: pickles whose arrays are ``.npy`` files in a zip.

``dump(obj, file_handler)`` writes a zip archive: the pickle of ``obj`` as the member ``pkl``, in
which every numpy array is replaced by a persistent id naming a member of its own, the array in
numpy's ``.npy`` format (so a shared variable's value can be read without unpickling, and loads
without pickle's arbitrary code). A shared variable's value is named after the variable
(``W``, then ``W_2`` if taken), any other array ``array_0``, ``array_1``, ... ``load(f)`` reads it
back: the same objects, shared variables included, with their values.

As Theano's, with its names: ``dump``, ``load``, ``StripPickler`` (a pickler that drops the
variables' ``tag.trace``, which holds stack frames), ``PersistentNdarrayID``,
``PersistentSharedVariableID``, ``PersistentNdarrayLoad``.
"""
from __future__ import annotations

import io
import pickle
import zipfile
from typing import IO, Any, Dict, Optional

import numpy as np

from ffigraph.compile.sharedvalue import SharedVariable
from ffigraph.graph.basic import Variable

DEFAULT_PROTOCOL = pickle.HIGHEST_PROTOCOL
_PREFIX = "ndarray."


class StripPickler(pickle.Pickler):
    """A pickler that removes ``tag.trace`` (where it was made: frames and lines, long and useless
    once the graph is on disk) from each variable it pickles, as Theano's does."""

    def __init__(self, file: IO[bytes], protocol: int = DEFAULT_PROTOCOL, extra_tag_to_remove: Optional[list] = None):
        super().__init__(file, protocol)
        self.tags_to_remove = ["trace"] + list(extra_tag_to_remove or [])

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Variable):
            for tag in self.tags_to_remove:
                obj.tag.__dict__.pop(tag, None)
        return NotImplemented


class PersistentNdarrayID:
    """The persistent id of every numpy array: its member name in the zip, where it is written."""

    def __init__(self, zip_file: zipfile.ZipFile) -> None:
        self.zip_file = zip_file
        self.count = 0
        self.seen: Dict[int, str] = {}
        self.taken: set = set()

    def _resolve_name(self, obj: np.ndarray) -> str:
        name = "array_%d" % self.count
        self.count += 1
        return name

    def _unique(self, name: str) -> str:
        candidate, k = name, 2
        while candidate in self.taken:
            candidate, k = "%s_%d" % (name, k), k + 1
        self.taken.add(candidate)
        return candidate

    def __call__(self, obj: Any) -> Optional[str]:
        if type(obj) is not np.ndarray or obj.dtype.hasobject:
            return None
        if id(obj) not in self.seen:   # one member per array, however many times it is referenced
            name = self._unique(self._resolve_name(obj))
            with self.zip_file.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, obj, allow_pickle=False)
            self.seen[id(obj)] = name
        return _PREFIX + self.seen[id(obj)]


class PersistentSharedVariableID(PersistentNdarrayID):
    """Also names a shared variable's value after the variable (``allow_unnamed``: an unnamed
    one's value is named as other arrays; False makes it a ValueError; ``allow_duplicates``:
    False makes two shared variables of one name a ValueError)."""

    def __init__(self, zip_file: zipfile.ZipFile, allow_unnamed: bool = True, allow_duplicates: bool = True) -> None:
        super().__init__(zip_file)
        self.allow_unnamed, self.allow_duplicates = allow_unnamed, allow_duplicates
        self.names: Dict[int, str] = {}
        self.shared_names: set = set()

    def _resolve_name(self, obj: np.ndarray) -> str:
        name = self.names.get(id(obj))
        return name if name is not None else super()._resolve_name(obj)

    def __call__(self, obj: Any) -> Optional[str]:
        if isinstance(obj, SharedVariable):
            if obj.name is None:
                if not self.allow_unnamed:
                    raise ValueError("dump: the shared variable %r has no name (allow_unnamed=False)" % (obj,))
            else:
                if obj.name in self.shared_names and not self.allow_duplicates:
                    raise ValueError("dump: two shared variables are named %r (allow_duplicates=False)" % obj.name)
                self.shared_names.add(obj.name)
                value = obj.container.storage[0]
                if type(value) is np.ndarray:
                    self.names.setdefault(id(value), obj.name)
            return None   # (pickled as usual; its value, an array, comes here next)
        return super().__call__(obj)


class PersistentNdarrayLoad:
    """The persistent load of ``dump``'s archives: an id names a ``.npy`` member, read once."""

    def __init__(self, zip_file: zipfile.ZipFile) -> None:
        self.zip_file = zip_file
        self.cache: Dict[str, np.ndarray] = {}

    def __call__(self, persid: str) -> np.ndarray:
        if not isinstance(persid, str) or not persid.startswith(_PREFIX):
            raise pickle.UnpicklingError("load: unknown persistent id %r" % (persid,))
        name = persid[len(_PREFIX):]
        if name not in self.cache:
            try:
                with self.zip_file.open(name + ".npy") as member:
                    self.cache[name] = np.lib.format.read_array(io.BytesIO(member.read()), allow_pickle=False)
            except KeyError:
                raise pickle.UnpicklingError("load: the archive has no array %r" % (name + ".npy",)) from None
        return self.cache[name]


def dump(obj: Any, file_handler: IO[bytes], protocol: int = DEFAULT_PROTOCOL,
         persistent_id: Any = PersistentSharedVariableID) -> None:
    """Write ``obj`` to the binary file ``file_handler`` as a zip of its pickle and its arrays."""
    with zipfile.ZipFile(file_handler, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zip_file:
        ids = persistent_id(zip_file)
        buffer = io.BytesIO()
        pickler = StripPickler(buffer, protocol=protocol)
        pickler.persistent_id = ids  # type: ignore[method-assign]  # (pickle's documented hook)
        pickler.dump(obj)
        zip_file.writestr("pkl", buffer.getvalue())


def load(f: IO[bytes], persistent_load: Any = PersistentNdarrayLoad) -> Any:
    """Read back what ``dump`` wrote to the binary file ``f``."""
    with zipfile.ZipFile(f, "r") as zip_file:
        try:
            data = zip_file.read("pkl")
        except KeyError:
            raise ValueError("load: %r is not an archive that dump wrote (it has no 'pkl' member)" % (f,)) from None
        unpickler = pickle.Unpickler(io.BytesIO(data))
        unpickler.persistent_load = persistent_load(zip_file)  # type: ignore[method-assign]
        return unpickler.load()


__all__ = ["dump", "load", "StripPickler", "PersistentNdarrayID", "PersistentSharedVariableID",
           "PersistentNdarrayLoad", "DEFAULT_PROTOCOL"]
