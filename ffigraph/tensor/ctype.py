"""The C contract of TensorType: a value lives in an ``ffg_array`` local (see the runtime)."""
from __future__ import annotations

import numpy as np

from ffigraph.abi import C_ELEMENT_TYPES, c_element_type, dtype_code  # noqa: F401  (re-exported)
from ffigraph.graph.c_interface import CType, MethodNotDefined

def c_number(value, dtype):
    """A C literal for one element."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype.kind in "iu":
        v = int(value)
        if dtype.itemsize == 8:
            return "INT64_MIN" if v == -2**63 else ("%dULL" % v if dtype.kind == "u" else "%dLL" % v)
        return str(v)
    if dtype.kind == "c":
        return "(%s + %s * I)" % (c_number(value.real, "float64"), c_number(value.imag, "float64"))
    v = float(value)
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(v)
    return text + ("f" if dtype.itemsize == 4 else "")


class TensorCType(CType):
    """Mixed into TensorType."""

    def c_abi_dtype(self):
        return self.numpy_dtype

    def c_headers(self, **kwargs):
        return ["<math.h>", "<complex.h>"] if self.dtype.startswith("complex") else ["<math.h>"]

    def c_declare(self, name, sub, check_input=True):
        return "ffg_array %(name)s;" % dict(name=name)

    def c_init(self, name, sub):
        return "%(name)s.data = NULL;\n%(name)s.owned = NULL;\n%(name)s.offered = NULL;\n%(name)s.in_offered = 0;" % dict(
            name=name)

    def c_offer_output(self, name, sub):
        """Let the node computing this output write into the block the host offers."""
        return "ffg_offer(&%s, %s);" % (name, sub["output"])

    def c_extract(self, name, sub, check_input=True):
        code, bits = dtype_code(self.numpy_dtype)
        static = ", ".join(str(-1 if s is None else s) for s in self.shape) or "0"
        return """
static const int64_t %(name)s_static[] = {%(static)s};
if (ffg_extract(&%(name)s, %(input)s, %(slot)d, %(label)s, %(check)d, %(code)d, %(bits)d, %(ndim)d,
                %(name)s_static, %(err)s))
    %(fail)s
""" % dict(name=name, static=static, input=sub["input"], slot=sub["input_index"], label=sub["input_name"],
           check=1 if check_input else 0, code=code, bits=bits, ndim=self.ndim, err=sub["err"],
           fail=sub["fail"])

    def c_sync(self, name, sub):
        code, bits = dtype_code(self.numpy_dtype)
        return "ffg_publish(%(output)s, &%(name)s, %(code)d, %(bits)d, %(ndim)d, %(shape)s, %(strides)s, %(alias)d);" % dict(
            output=sub["output"], name=name, code=code, bits=bits, ndim=self.ndim, shape=sub["out_shape"],
            strides=sub["out_strides"], alias=sub["alias_of"])

    def c_profile_value(self, name, sub):
        """Record this value's shape and bytes after its node ran (profiled libraries only)."""
        return "ffg_profile_array(%s, &%s, %d, %d);" % (sub["record"], name, self.ndim, self.numpy_dtype.itemsize)

    def c_cleanup(self, name, sub):
        return "ffg_release(%(alloc)s, %(name)s.owned);\n%(name)s.owned = NULL;" % dict(
            alloc=sub["allocator"], name=name)

    def c_literal(self, name, data):
        data = np.asarray(data)
        ctype = c_element_type(self.dtype)
        values = ", ".join(c_number(v, self.dtype) for v in data.reshape(-1)) or "0"
        glob = "static const %s %s_values[] = {%s};" % (ctype, name, values)
        dims, stride = [], 1
        for axis in range(data.ndim - 1, -1, -1):
            dims.append("%s.shape[%d] = %d; %s.strides[%d] = %d;" % (name, axis, data.shape[axis], name, axis, stride))
            stride *= max(data.shape[axis], 1)
        stmts = "%s.data = (char *)%s_values;\n%s.owned = NULL;\n%s" % (name, name, name, "\n".join(reversed(dims)))
        return glob, stmts

    def c_registry_values(self):
        """Names the generic ops' registered C code may use (see ffigraph.tensor.generic_ops)."""
        return dict(ndim=self.ndim, itemsize=self.numpy_dtype.itemsize, ctype=c_element_type(self.dtype))

    def c_code_cache_version(self):
        return (1,)


def float_element_type(op, dtype):
    """The C element type of ``dtype`` for an op whose C covers float32 and float64 only
    (MethodNotDefined, naming the op and the dtype, for any other)."""
    if np.dtype(dtype).name not in ("float32", "float64"):
        raise MethodNotDefined("%s: C code for float32 and float64 only, not %s" % (op, dtype))
    return c_element_type(dtype)
