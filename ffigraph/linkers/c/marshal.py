"""Moving values across the ABI: numpy arrays into FfgTensor slots, output slots into arrays.

Inputs are passed without a copy whenever the array can be described
(strides in whole elements, negative and zero included). Outputs come back
without a copy: usually the library writes straight into a numpy array the
host offered (sized like the previous result); otherwise the array's base
keeps the library's block alive and frees it exactly once (``ffi.gc``), or
keeps alive the input it views.

This is the per-call hot path: it avoids Python-level allocation besides the
outputs, and skips re-describing an input that is the very object passed
last time (holding that reference keeps its buffer valid).
"""
from __future__ import annotations

import platform
import sys

import numpy as np

from ffigraph.abi import DEVICE_CPU, DEVICE_CUDA, MAX_NDIM, c_free, dtype_code, dtype_from_code, error_codes, ffi
from ffigraph.linkers import devices
from ffigraph.linkers.c.pycode import compiled

_NULL = ffi.NULL
_HOST_BUFFER = -2
# A spare output array is free when only the block holds it: the spare list, the cdata pointer made
# by from_buffer (its buffer view holds the array), the call's local variable and getrefcount's own
# argument. PyPy has no reference counts: there every call offers a fresh array.
_HAS_REFCOUNT = hasattr(sys, "getrefcount") and platform.python_implementation() == "CPython"
# An output block the library allocated itself, up to this size, is copied into an ndarray and freed
# (about 0.5 us) rather than wrapped (about 2 us, whatever the size): at memcpy speed the copy of
# 16 KiB costs about what the wrapping does.
COPY_OWNED_BELOW = 16 << 10
_FREE_REFS = 4
_DTYPE_CODES = {}


class _NotDescribed:
    """What an input slot's "array passed last call" holds while the slot describes no value (before
    the first call, after a failed one): never the same object as a value a caller passes, ``None``
    included, so such a value is always checked and described."""

    __slots__ = ()

    def __repr__(self):
        return "<no value described>"


NOT_DESCRIBED = _NotDescribed()


class OutputBatches:
    """Where the arrays offered for small outputs come from on PyPy.

    With no reference counts an array returned last call cannot be known to be free, so every call
    needs a fresh one; there ``np.empty`` costs about 0.7 us and ``ffi.from_buffer`` 0.4 us (cpyext),
    against 0.3 us for indexing a row of an array made earlier. So an output of up to
    ``BATCH_BYTES / 8`` bytes is offered the rows of a batch ``np.empty((n,) + shape)``, one per
    call, whose address is known once: each result is a distinct row that nothing writes again
    (a result is a view of its batch, which stays alive while any of its rows does: at most
    ``BATCH_BYTES`` for each result held). Larger outputs get batches of one."""

    BATCH_BYTES = 32 << 10
    MOST_ROWS = 64

    def __init__(self, dtypes):
        n = len(dtypes)
        self.dtypes = dtypes
        self.arrays, self.pointers, self.steps = [None] * n, [None] * n, [0] * n
        self.lengths, self.next, self.shapes = [0] * n, [0] * n, [None] * n
        self._buffers = [None] * n   # the from_buffer cdata, which holds its array

    def start(self, k, shape):
        """A new batch for output ``k`` of ``shape``; the index of its first row (0)."""
        dtype = self.dtypes[k]
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        rows = max(1, min(self.MOST_ROWS, self.BATCH_BYTES // max(nbytes, 1))) if nbytes * 8 <= self.BATCH_BYTES else 1
        arrays = np.empty((rows,) + tuple(shape), dtype)
        self._buffers[k] = ffi.from_buffer(arrays)
        self.arrays[k], self.pointers[k] = arrays, ffi.cast("char *", self._buffers[k])
        self.steps[k], self.lengths[k], self.shapes[k], self.next[k] = nbytes, rows, shape, 0
        return 0


def _code_of(dtype):
    try:
        return _DTYPE_CODES[dtype]
    except KeyError:
        code = _DTYPE_CODES[dtype] = dtype_code(dtype)
        return code


def describable(arr):
    """An array whose strides are whole elements: passed as is; otherwise a contiguous copy."""
    itemsize = arr.itemsize
    for s in arr.strides:
        if s % itemsize:
            return np.ascontiguousarray(arr)
    if not arr.flags.aligned:   # the library refuses misaligned data (FFG_ERR_VALUE): pass an aligned copy
        return np.array(arr, order="C", copy=True)
    return arr


def as_host_array(value):
    """A numpy array for ``value``: arrays pass, ``__dlpack__`` objects (CPU) are viewed, others converted."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and hasattr(np, "from_dlpack"):
        return np.from_dlpack(value)
    arr = np.asarray(value)
    if arr.dtype.hasobject:   # (None, or a list of arrays of different lengths, say)
        raise TypeError("expected an array of numbers, got %s" % _what(value))
    return arr


def _what(value):
    text = repr(value)
    return "%s (%s)" % (text if len(text) <= 60 else text[:57] + "...", type(value).__name__)


def _data_pointer(arr):
    try:
        return ffi.from_buffer(arr)  # fast, for contiguous arrays (the buffer protocol refuses others)
    except (TypeError, ValueError, BufferError):
        return ffi.cast("void *", arr.__array_interface__["data"][0])


class UnownedOutputError(RuntimeError):
    """An output slot came back neither owning its memory nor viewing an input it declared (C code
    that returned memory it does not own: DebugMode reports it as an undeclared view)."""

    def __init__(self, message, output_index):
        super().__init__(message)
        self.output_index = output_index


class DeviceView:
    """What the ABI needs of one device array (made by ``ffigraph.cuda.marshal``); ``owner`` keeps its
    memory alive."""

    __slots__ = ("address", "shape", "strides", "dtype", "device_id", "owner", "readonly")

    def __init__(self, address, shape, strides, dtype, device_id=0, owner=None, readonly=False):
        self.address = int(address)
        self.shape = tuple(int(s) for s in shape)
        self.strides = None if strides is None else tuple(int(s) for s in strides)
        self.dtype = np.dtype(dtype)
        self.device_id = int(device_id)
        self.owner = owner
        self.readonly = bool(readonly)

    def element_strides(self):
        """Strides in elements (C order when none were given)."""
        if self.strides is not None:
            return self.strides
        out, s = [], 1
        for n in reversed(self.shape):
            out.append(s)
            s *= n
        return tuple(reversed(out))

    def __repr__(self):
        return "DeviceView(0x%x, shape=%s, strides=%s, %s, device %d)" % (
            self.address, self.shape, self.strides, self.dtype, self.device_id)


class DeviceBlock:
    """A device output as read from its slot; the output's type wraps it (GPUArray or DeviceArray)."""

    __slots__ = ("address", "shape", "strides", "dtype", "device_id", "keep")

    def __init__(self, address, shape, strides, dtype, device_id, keep):
        self.address, self.shape, self.strides = address, shape, strides
        self.dtype, self.device_id, self.keep = dtype, device_id, keep


class _OutputArray:
    """Exposes a C block (or a view into an input) to numpy; numpy keeps it as the base."""

    __slots__ = ("__array_interface__", "keep")

    def __init__(self, interface, keep):
        self.__array_interface__ = interface
        self.keep = keep


class CallBlock:
    """Preallocated ABI structs for one library state: inputs, outputs, shape/stride storage, error."""

    def __init__(self, n_inputs, n_outputs, out_dtypes, out_offer, out_on_device=None):
        self.n_inputs = n_inputs
        self.n_outputs = n_outputs
        self.inputs = ffi.new("FfgTensor[]", max(n_inputs, 1))
        self.dims = ffi.new("int64_t[]", max(2 * MAX_NDIM * n_inputs, 1))
        self.outputs = ffi.new("FfgOutput[]", max(n_outputs, 1))
        self.err = ffi.new("FfgError *")
        self.out_dtypes = [np.dtype(d) for d in out_dtypes]
        self.out_offer = list(out_offer)            # which outputs may be written into a host array
        # which outputs live on a GPU (known from their types: no per-call read of the slot's device)
        self.out_on_device = list(out_on_device or [False] * n_outputs)
        self.out_last_shape = [None] * n_outputs     # shape of the previous result: the next offer
        self.offered = [None] * n_outputs
        # the array returned last for each output and its cdata pointer: offered again by arity_call
        # when nobody else holds it (CPython's reference count), so a loop allocates nothing
        self.spare = [None] * n_outputs
        self.spare_ptr = [None] * n_outputs
        self.in_slot = [None] * n_outputs   # the spare pointer each output slot holds now, if any
        # cdata views of each slot, made once (indexing a cdata array allocates)
        self.out_slots = [self.outputs[k] for k in range(n_outputs)]
        self.out_tensors = [o.tensor for o in self.out_slots]
        # the arrays the input slots point at, and the same where the slot points at that very array
        # (no copy); NOT_DESCRIBED where a slot describes nothing a caller may pass again
        self.keep = [NOT_DESCRIBED] * n_inputs
        self.exact = [NOT_DESCRIBED] * n_inputs
        # the call trampoline's PackedRun (set once, by whoever makes the arity call): told each output's
        # offered shape and, while ``exact[i]`` holds it, each input's array object to watch
        self.packed = None
        self.described = [None] * n_inputs  # (shape, strides, dtype) last written into each slot
        # the same, apart (arity_call compares them one by one, stopping at the first difference)
        self.dshape, self.dstrides, self.ddtype = [None] * n_inputs, [None] * n_inputs, [None] * n_inputs
        self.device_release = None   # how an owned CUDA output is freed (None: cudaFree)
        self._entry_namespaces = []   # the globals of each call written by arity_call
        self.data_refs = [None] * n_inputs
        for i in range(n_inputs):
            t = self.inputs[i]
            t.device.device_type = DEVICE_CPU
            t.device.device_id = 0
            t.dtype.lanes = 1
            t.byte_offset = 0
            t.shape = self.dims + 2 * MAX_NDIM * i
            t.strides = self.dims + 2 * MAX_NDIM * i + MAX_NDIM

    def set_input(self, i, arr):
        """Point slot i at ``arr`` (an ndarray) without copying when it can be described."""
        shape, strides, dtype = arr.shape, arr.strides, arr.dtype
        if arr is self.keep[i] and self.described[i] == (shape, strides, dtype):
            return  # the same object as last call, unchanged: the slot still describes it
        ndim = len(shape)
        if ndim > MAX_NDIM:
            raise ValueError("arrays of more than %d dimensions cannot cross the ABI" % MAX_NDIM)
        src = describable(arr)
        t = self.inputs[i]
        ref = _data_pointer(src)
        t.data = ref
        t.ndim = ndim
        code, bits = _code_of(dtype)
        t.dtype.code = code
        t.dtype.bits = bits
        itemsize = src.itemsize
        tshape, tstrides = t.shape, t.strides
        for d in range(ndim):
            tshape[d] = shape[d]
            tstrides[d] = src.strides[d] // itemsize
        self.keep[i] = arr
        self.exact[i] = arr if src is arr else NOT_DESCRIBED
        if self.packed is not None:
            self.packed.watch(i, arr if src is arr else None)
        self.data_refs[i] = (src, ref)
        self.described[i] = (shape, strides, dtype) if src is arr else None
        if src is arr:
            self.dshape[i], self.dstrides[i], self.ddtype[i] = shape, strides, dtype
        else:   # a copy was described: the next call describes again
            self.dshape[i] = self.dstrides[i] = self.ddtype[i] = None

    def set_device_input(self, i, view):
        """Point slot i at a device array (a ``ffigraph.cuda.marshal.DeviceView``), strides as they are."""
        shape = view.shape
        ndim = len(shape)
        if ndim > MAX_NDIM:
            raise ValueError("arrays of more than %d dimensions cannot cross the ABI" % MAX_NDIM)
        self._forget_input(i)
        t = self.inputs[i]
        t.data = ffi.cast("void *", view.address)
        t.device.device_type = DEVICE_CUDA
        t.device.device_id = view.device_id
        t.ndim = ndim
        code, bits = _code_of(view.dtype)
        t.dtype.code = code
        t.dtype.bits = bits
        tshape, tstrides = t.shape, t.strides
        for d, s in enumerate(view.element_strides()):
            tshape[d] = shape[d]
            tstrides[d] = s
        self.keep[i] = view.owner
        self.data_refs[i] = (view, None)

    def offer_outputs(self):
        """Offer each output a fresh numpy array shaped like its previous result."""
        in_slot = self.in_slot
        for k, o in enumerate(self.out_slots):
            in_slot[k] = None
            shape = self.out_last_shape[k]
            if shape is None or not self.out_offer[k]:
                o.host_buffer = _NULL
                o.host_capacity = 0
                self.offered[k] = None
                continue
            buf = np.empty(shape, self.out_dtypes[k])
            o.host_buffer = ffi.from_buffer(buf)
            o.host_capacity = buf.nbytes
            self.offered[k] = buf

    def get_output(self, k):
        """The k-th output as an ndarray that owns (or keeps alive) its memory."""
        o = self.out_slots[k]
        t = self.out_tensors[k]
        shape = tuple(ffi.unpack(t.shape, t.ndim)) if t.ndim else ()
        alias = o.alias_of
        if alias == _HOST_BUFFER:
            buf = self.offered[k]
            self.offered[k] = None
            if buf.shape != shape:
                buf = buf.reshape(-1)[:_size(shape)].reshape(shape)
            self._remember_shape(k, shape)
            return buf
        dtype = dtype_from_code(t.dtype.code, t.dtype.bits)
        if self.out_on_device[k]:
            return self._device_output(k, o, t, shape, dtype)
        itemsize = dtype.itemsize
        strides = tuple([s * itemsize for s in ffi.unpack(t.strides, t.ndim)]) if t.ndim else ()
        if o.base != _NULL:
            self._remember_shape(k, shape)
            nbytes = _size(shape) * itemsize
            if nbytes <= COPY_OWNED_BELOW and _c_contiguous(shape, strides, itemsize):
                # a small block the library allocated itself (an in-place result, say): copying it
                # into an ndarray and freeing it costs a fraction of wrapping it for numpy
                out = np.empty(shape, dtype)
                ffi.memmove(out, ffi.cast("char *", t.data) + t.byte_offset, nbytes)
                c_free(o.base)
                return out
            keep = ffi.gc(o.base, c_free, size=nbytes)
        elif alias >= 0:
            keep = self.data_refs[alias][0]  # the array the slot describes (a copy when strides were odd)
        else:
            raise UnownedOutputError("output %d came back with neither its own memory nor an input to view" % k, k)
        address = int(ffi.cast("uintptr_t", t.data)) + t.byte_offset
        interface = {"data": (address, False), "shape": shape, "strides": strides,
                     "typestr": dtype.str, "version": 3}
        return np.asarray(_OutputArray(interface, keep))

    def _remember_shape(self, k, shape):
        """Output ``k`` is offered an array of ``shape`` from the next call on (the trampoline is told)."""
        self.out_last_shape[k] = shape
        if self.packed is not None and self.out_offer[k] and not self.out_on_device[k]:
            self.packed.expect(k, shape)

    def _device_output(self, k, o, t, shape, dtype):
        """A device result, as a DeviceBlock (the output type wraps it: GPUArray or DeviceArray)."""
        strides = tuple(ffi.unpack(t.strides, t.ndim)) if t.ndim else ()
        address = int(ffi.cast("uintptr_t", t.data)) + t.byte_offset
        if o.base != _NULL:
            # only reached by graphs with CUDA outputs, so the CUDA device is registered
            keep = ffi.gc(o.base, self.device_release or devices.get("cuda").free_block)
        elif o.alias_of >= 0:
            keep = self.data_refs[o.alias_of][0]
        else:
            raise UnownedOutputError("device output %d came back with neither its own memory nor an input to "
                                     "view" % k, k)
        return DeviceBlock(address, shape, strides, dtype, t.device.device_id, keep)

    def arity_call(self, run, state, fail, out_ndims, guard=None, trust_same=False):
        """``call(v0, ..., v{n-1})`` for this block: the per-call path written out for its arity.

        The same steps as ``set_input`` / ``offer_outputs`` / ``get_output``, with no loop over
        the slots, no packing of the arguments and the common cases inline: an input that is the
        very array passed last time (same shape, strides, dtype) is not described again; an output
        the library wrote into the offered array comes back as it is. On CPython the array returned
        last time is offered again when nobody else holds it any more (its reference count says
        so): a loop that drops each result allocates nothing. ``fail()`` raises the call's error.
        ``out_ndims`` are the outputs' static ranks. Only for host arrays with no conversion hooks
        (the caller checks). It returns the list of outputs ``[out0, ...]``.

        With the call trampoline (``self.packed``, a ``callshim.PackedRun``), its ``call(args)``
        replaces ``run(...)``: it answers whether every output came back in the array offered, as
        offered (then no output slot is read), and, when it watches inputs, whether an input that
        is the very array of last call was changed in place (then the inputs are described again
        and it runs once more); an input is then checked from Python by identity alone. Without it
        (PyPy), such an input's shape, strides and dtype are read and compared, unless
        ``trust_same`` (``trust_input=True``): then it is taken as unchanged, so an array reshaped
        in place since the last call is not noticed, like any other wrong input under
        ``trust_input``.

        ``guard`` lets the caller put its own steps around the call in the same Python frame (a
        frame costs more than the steps), as source lines: ``params`` (the call's parameters, by
        default ``v0`` ... one per slot), ``enter`` (before), ``layers`` (outermost first, each a
        callable that wraps the lines of the call, which set ``result_``, in lines that hold a lock
        around them: ``ffigraph.compile.calllock.held_lines``), ``checks`` (in a ``try``, before the
        inputs are described; they set every ``v<i>`` that is not a parameter), ``input_checks``
        (``{i: lines}``, run for input ``i`` only when it is not the array described last call:
        one that is passed them then and is unchanged since; they may replace ``v<i>``), ``after`` (once
        ``out0``... are read), ``result`` (the expression returned), ``exit`` (in the ``finally``),
        and the ``namespace`` those lines use."""
        n_in, n_out = self.n_inputs, self.n_outputs
        guard = dict(dict(params=["v%d" % i for i in range(n_in)], enter=[], layers=[], checks=[], input_checks={},
                          after=[], exit=[], result="[%s]" % ", ".join("out%d" % k for k in range(n_out)),
                          namespace={}),
                     **(guard or {}))
        packed = self.packed
        by_identity = trust_same or (packed is not None and packed.watching)
        # a dropped result is offered again only where the trampoline can check it is still intact
        reuse = _HAS_REFCOUNT and packed is not None and packed.watching
        lines = []
        for i in range(n_in):
            # not the very array described last call, unchanged since: check it (the caller's lines,
            # which may replace it by a filtered value) and describe it
            if by_identity:
                lines += ["    if v{i} is not exact[{i}]:".format(i=i)]
            else:
                lines += ["    if v{i} is not keep[{i}] or v{i}.shape != dshape[{i}] or v{i}.strides != dstrides[{i}] "
                          "or v{i}.dtype is not ddtype[{i}]:".format(i=i)]
            lines += ["        " + line for line in guard["input_checks"].get(i, ())]
            lines += ["        if v{i}.__class__ is not ndarray:".format(i=i),
                      "            v{i} = as_host_array(v{i})".format(i=i),
                      "        set_input({i}, v{i})".format(i=i)]
        describe = lines
        lines = list(describe)
        for k in range(n_out):
            if not self.out_offer[k] or self.out_on_device[k]:
                lines += ["    slot{k}.host_buffer = NULL".format(k=k), "    slot{k}.host_capacity = 0".format(k=k),
                          "    offered[{k}] = in_slot[{k}] = None".format(k=k)]
                continue
            lines += ["    shape{k} = last_shape[{k}]".format(k=k),
                      "    if shape{k} is None:".format(k=k),
                      "        slot{k}.host_buffer = NULL".format(k=k),
                      "        slot{k}.host_capacity = 0".format(k=k),
                      "        buf{k} = offered[{k}] = in_slot[{k}] = None".format(k=k),
                      "    else:"]
            if reuse:
                # the spare (last returned) array again when only the block holds it, else a fresh one;
                # the trampoline withdraws the offer if the array is no longer the block it was
                lines += ["        buf{k} = spare[{k}]".format(k=k),
                          "        if buf{k} is None or getrefcount(buf{k}) != FREE_REFS:".format(k=k),
                          "            buf{k} = empty(shape{k}, dtype{k})".format(k=k),
                          "            set_spare({k}, buf{k})".format(k=k),
                          "        ptr{k} = spare_ptr[{k}]".format(k=k),
                          "        if in_slot[{k}] is not ptr{k}:   # the slot still points at a reused spare"
                          .format(k=k),
                          "            slot{k}.host_buffer = ptr{k}".format(k=k),
                          "            slot{k}.host_capacity = buf{k}.nbytes".format(k=k),
                          "            in_slot[{k}] = ptr{k}".format(k=k)]
                if packed is None:
                    lines += ["        offered[{k}] = buf{k}".format(k=k)]
            elif _HAS_REFCOUNT:
                # nothing can prove a returned array unchanged (no trampoline): a fresh one each call
                lines += ["        buf{k} = empty(shape{k}, dtype{k})".format(k=k),
                          "        ptr{k} = from_buffer(buf{k})".format(k=k),
                          "        slot{k}.host_buffer = ptr{k}".format(k=k),
                          "        slot{k}.host_capacity = buf{k}.nbytes".format(k=k),
                          "        in_slot[{k}] = ptr{k}".format(k=k)]
                if packed is None:
                    lines += ["        offered[{k}] = buf{k}".format(k=k)]
            else:
                # no reference counts (PyPy): the next row of a batch of fresh arrays (OutputBatches)
                lines += ["        n{k} = batch_next[{k}]".format(k=k),
                          "        if n{k} >= batch_len[{k}] or batch_shape[{k}] != shape{k}:".format(k=k),
                          "            n{k} = new_batch({k}, shape{k})".format(k=k),
                          # (a row of a batch of 0-d arrays must be a 0-d view, not a numpy scalar)
                          "        buf{k} = batch[{k}][n{k}{view}]".format(k=k, view="" if out_ndims[k] else ", ..."),
                          "        ptr{k} = batch_ptr[{k}] + n{k} * batch_step[{k}]".format(k=k),
                          "        batch_next[{k}] = n{k} + 1".format(k=k),
                          "        slot{k}.host_buffer = ptr{k}".format(k=k),
                          "        slot{k}.host_capacity = batch_step[{k}]".format(k=k),
                          "        in_slot[{k}] = ptr{k}".format(k=k),
                          "        offered[{k}] = buf{k}".format(k=k)]
        # reading the outputs: each one the array offered, or its slot read (get_output)
        read = []
        for k in range(n_out):
            ndim = out_ndims[k]
            if self.out_offer[k] and not self.out_on_device[k] and ndim is not None:
                shape = "(%s)" % "".join("t%d.shape[%d], " % (k, d) for d in range(ndim))
                read += ["if buf{k} is not None and slot{k}.alias_of == HOST_BUFFER and {shape} == shape{k}:"
                         .format(k=k, shape=shape),
                         "    offered[{k}] = None".format(k=k),
                         "    out{k} = buf{k}".format(k=k),
                         "else:"]
                if packed is not None:   # (offered[k] is written only here, where it is read)
                    read += ["    offered[{k}] = buf{k}".format(k=k)]
                if reuse:
                    read += ["    set_spare({k}, None)".format(k=k)]
                read += ["    in_slot[{k}] = None".format(k=k),
                         "    out{k} = get_output({k})".format(k=k)]
            else:
                read.append("out{k} = get_output({k})".format(k=k))
        if packed is not None:
            # the one-argument trampoline: 0 when every output is its offered array, as offered
            lines += ["    code = packed_call(packed_args)"]
            as_offered = ["out{k} = buf{k}".format(k=k) for k in range(n_out)] or ["pass"]
            on_code = ["if code != LOOK:", "    fail()"] + read
            if packed.watching:   # an input changed in place: nothing ran; describe them all again
                on_code = (["if code == CHANGED:", "    forget_inputs()"] + describe
                           + ["    code = packed_call(packed_args)", "    if code == CHANGED:", "        changed()",
                              "if code:"] + ["    " + line for line in on_code] + ["else:"]
                           + ["    " + line for line in as_offered])
            lines += ["    if code:"] + ["        " + line for line in on_code]
            lines += ["    else:"] + ["        " + line for line in as_offered]
        else:
            lines += ["    if run(state, tensors, %d, outputs, %d, err):" % (n_in, n_out), "        fail()"]
            lines += ["    " + line for line in read]
        lines = [line[4:] for line in lines]   # written one level in: the body of call()
        lines = guard["checks"] + lines + guard["after"] + ["result_ = " + guard["result"]]
        # a call that raises (a failure, a refused input, an interrupt at any step) leaves no slot
        # describing a value and no output array to be offered again
        lines = ["try:"] + _indented(lines) + ["except BaseException:", "    forget_call()", "    raise"]
        for hold in reversed(guard["layers"]):
            lines = hold(lines)
        lines.append("return result_")
        if guard["exit"]:
            lines = ["try:"] + _indented(lines) + ["finally:"] + _indented(guard["exit"])
        lines = ["def call(%s):" % ", ".join(guard["params"])] + _indented(guard["enter"] + lines)
        source = "\n".join(lines) + "\n"
        namespace = dict(ndarray=np.ndarray, as_host_array=as_host_array, keep=self.keep, exact=self.exact,
                         dshape=self.dshape,
                         dstrides=self.dstrides, ddtype=self.ddtype,
                         set_input=self.set_input, set_spare=self.set_spare, forget_call=self.forget_call,
                         NULL=_NULL, offered=self.offered, last_shape=self.out_last_shape,
                         spare=self.spare, spare_ptr=self.spare_ptr, in_slot=self.in_slot, empty=np.empty,
                         from_buffer=ffi.from_buffer,
                         FREE_REFS=_FREE_REFS, run=run, state=state, tensors=self.inputs, outputs=self.outputs,
                         err=self.err, fail=fail, HOST_BUFFER=_HOST_BUFFER, get_output=self.get_output)
        if _HAS_REFCOUNT:
            namespace["getrefcount"] = sys.getrefcount
        else:
            batches = self.batches = OutputBatches(self.out_dtypes)
            namespace.update(batch=batches.arrays, batch_ptr=batches.pointers, batch_step=batches.steps,
                             batch_len=batches.lengths, batch_next=batches.next, batch_shape=batches.shapes,
                             new_batch=batches.start)
        if packed is not None:
            namespace.update(packed_call=packed.call, packed_args=packed.args, LOOK=packed.LOOK,
                             CHANGED=packed.CHANGED, forget_inputs=self.release_inputs, changed=_changed_while_passed)
            for k in range(n_out):
                packed.expect(k, self.out_last_shape[k] if self.out_offer[k] and not self.out_on_device[k] else None)
        namespace.update(guard["namespace"])
        for k in range(n_out):
            namespace["slot%d" % k] = self.out_slots[k]
            namespace["t%d" % k] = self.out_tensors[k]
            namespace["dtype%d" % k] = self.out_dtypes[k]
        self._entry_namespaces.append(namespace)   # (renew_state points them at a new state)
        exec(compiled(source, "<ffigraph call, %d in, %d out>" % (n_in, n_out)), namespace)
        call = namespace["call"]
        call.source = source   # for reading what runs (f._entry.source)
        return call

    def release_inputs(self):
        """Forget every input (after a failure or an interrupted call, or when asked not to hold
        references): the next call describes each value it is given, whatever it is."""
        for i in range(self.n_inputs):
            self._forget_input(i)

    def _forget_input(self, i):
        if self.packed is not None:
            self.packed.watch(i, None)   # first: the trampoline must not read an array let go
        self.keep[i] = self.exact[i] = NOT_DESCRIBED
        self.data_refs[i] = None
        self.described[i] = None
        self.dshape[i] = self.dstrides[i] = self.ddtype[i] = None

    def set_spare(self, k, buf):
        """Output ``k``'s spare array (offered again while nobody else holds it) is ``buf``, or none."""
        if self.packed is not None:
            self.packed.spare(k, None)   # first: the trampoline must not read an array let go
        self.spare[k] = buf
        self.spare_ptr[k] = None if buf is None else ffi.from_buffer(buf)
        if buf is not None:
            self.packed.spare(k, buf)

    def release_outputs(self):
        """Forget every spare output array and offer (a call that did not end as it should)."""
        for k in range(self.n_outputs):
            self.set_spare(k, None)
            self.offered[k] = self.in_slot[k] = None
            self.out_slots[k].host_buffer = _NULL
            self.out_slots[k].host_capacity = 0

    def renew_state(self, run, state):
        """Calls run on ``state`` from now on (a forked child's new state), describing afresh."""
        if self.packed is not None:
            self.packed.renew(run, state)
        for namespace in self._entry_namespaces:
            namespace["state"] = state
        self.forget_call()

    def forget_call(self):
        """After a call that raised (a failure, an interrupt): no input or output of it is reused."""
        self.release_inputs()
        self.release_outputs()

    def error(self):
        """(exception class, message, node index, input index) from the error record."""
        err = self.err
        name, cls = error_codes().get(err.code, ("runtime", RuntimeError))
        message = ffi.string(err.message).decode("utf-8", "replace")
        if name == "cuda":
            cls = _cuda_error_class(err.detail)
        return cls, message, err.node, err.input


def _indented(lines):
    return ["    " + line for line in lines]


def _changed_while_passed():
    raise RuntimeError("an input array was changed in place (its shape, strides, dtype or data) while it "
                       "was being passed to the library, by another thread; nothing was computed")


def _cuda_error_class(cuda_code):
    """A CudaError subclass carrying CUDA's error number (raised like the other classes)."""
    from ffigraph.abi import CudaError

    return type("CudaError", (CudaError,), {"cuda_code": int(cuda_code), "__module__": "ffigraph.abi"})


def _c_contiguous(shape, strides, itemsize):
    """Whether byte ``strides`` lay ``shape`` out in C order (axes of length 1 may have any stride)."""
    step = itemsize
    for n, stride in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and stride != step:
            return False
        step *= n
    return True


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n
