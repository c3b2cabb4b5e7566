"""Plain-C code of the linear-algebra ops: LAPACK from the OpenBLAS that ``dot`` links, called once
per batch entry in a loop over the broadcast batch axes.

Which library: the one ``ffigraph.tensor.blas.library()`` chooses for ``Dot`` (numpy's own
OpenBLAS where it can be shared, else the scipy-openblas64 package; always the package in an
export). Both are ILP64 builds that carry LAPACK under Fortran's calling convention: every
argument by address, every integer an ``int64_t``, and one hidden ``size_t`` length per
character argument at the end. Their names: ``<prefix><routine>_<suffix>`` (``scipy_dpotrf_64_``
in numpy 2's copy and the package, ``dpotrf_64_`` in numpy 1.26's). The prototypes of the
routines a node calls are declared in its support code (table ``ROUTINES``); no LAPACK header
is included. Without such a library the ops have no C code and run their numpy ``perform``.

The generated code of a node (``c_code`` below), for inputs ``a0, a1, ...`` (their last
``core_ndims_in()`` axes the core, the axes before them batch axes) and outputs ``z0, ...``:

1. the batch shape: each input's batch axes, aligned on the right, broadcast (FFG_ERR_VALUE
   naming the shapes otherwise);
2. the op's own checks of the core shapes (``op.c_check``: a square matrix, matching rows, ...);
3. the outputs, C-contiguous, batch axes then the op's core shapes (``op.c_core_out_shape``);
4. the op's set-up (``op.c_prepare``: e.g. a LAPACK workspace query) and its workspaces
   (``op.c_workspace``), allocated once for the whole batch and released by the cleanup;
5. for each batch index (an odometer over the batch axes, a broadcast axis staying at 0), the
   op's code for one entry (``op.c_core``), given pointers to that entry of every input (with
   their element strides, so any layout is read in place or copied by ``ffg_la_load``) and of
   every output (contiguous). A routine that fails on the values (``info > 0``: not positive
   definite, singular, no convergence) either sets FFG_ERR_LINALG, which Python raises as
   ``numpy.linalg.LinAlgError`` naming the node, or fills that entry with NaN where the op was
   asked to (``on_error='nan'``).

Every routine reads and writes column-major (Fortran) matrices: inputs are copied into a
column-major workspace with ``ffg_la_load``, results copied out with ``ffg_la_store``. These
copies are O(n^2) beside the routines' O(n^3) work, and make every input layout (transposed,
negative or zero strides) take the same path.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor import blas
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.reduce_c import _Lines
from ffigraph.tensor.sort_c import c_message

VERSION = (2,)

#: Fortran LAPACK routines the ops call: name -> (parameters with %(T)s for the float type, count
#: of character arguments, whose hidden lengths come last). Integers are ILP64 (int64_t).
ROUTINES = {
    "potrf": ("const char *uplo, const int64_t *n, %(T)s *a, const int64_t *lda, int64_t *info", 1),
    "potrs": ("const char *uplo, const int64_t *n, const int64_t *nrhs, const %(T)s *a, const int64_t *lda, "
              "%(T)s *b, const int64_t *ldb, int64_t *info", 1),
    "trtrs": ("const char *uplo, const char *trans, const char *diag, const int64_t *n, const int64_t *nrhs, "
              "const %(T)s *a, const int64_t *lda, %(T)s *b, const int64_t *ldb, int64_t *info", 3),
    "getrf": ("const int64_t *m, const int64_t *n, %(T)s *a, const int64_t *lda, int64_t *ipiv, int64_t *info", 0),
    "getrs": ("const char *trans, const int64_t *n, const int64_t *nrhs, const %(T)s *a, const int64_t *lda, "
              "const int64_t *ipiv, %(T)s *b, const int64_t *ldb, int64_t *info", 1),
    "getri": ("const int64_t *n, %(T)s *a, const int64_t *lda, const int64_t *ipiv, %(T)s *work, "
              "const int64_t *lwork, int64_t *info", 0),
    "syevd": ("const char *jobz, const char *uplo, const int64_t *n, %(T)s *a, const int64_t *lda, %(T)s *w, "
              "%(T)s *work, const int64_t *lwork, int64_t *iwork, const int64_t *liwork, int64_t *info", 2),
    "gesdd": ("const char *jobz, const int64_t *m, const int64_t *n, %(T)s *a, const int64_t *lda, %(T)s *s, "
              "%(T)s *u, const int64_t *ldu, %(T)s *vt, const int64_t *ldvt, %(T)s *work, const int64_t *lwork, "
              "int64_t *iwork, int64_t *info", 1),
    "geqrf": ("const int64_t *m, const int64_t *n, %(T)s *a, const int64_t *lda, %(T)s *tau, %(T)s *work, "
              "const int64_t *lwork, int64_t *info", 0),
    "orgqr": ("const int64_t *m, const int64_t *n, const int64_t *k, %(T)s *a, const int64_t *lda, "
              "const %(T)s *tau, %(T)s *work, const int64_t *lwork, int64_t *info", 0),
    # BLAS level 3, under the same naming: triangular solves and products with several columns
    "trsm": ("const char *side, const char *uplo, const char *transa, const char *diag, const int64_t *m, "
             "const int64_t *n, const %(T)s *alpha, const %(T)s *a, const int64_t *lda, %(T)s *b, const int64_t *ldb", 4),
    "trmm": ("const char *side, const char *uplo, const char *transa, const char *diag, const int64_t *m, "
             "const int64_t *n, const %(T)s *alpha, const %(T)s *a, const int64_t *lda, %(T)s *b, const int64_t *ldb", 4),
}

COMMON = r"""
#ifndef FFG_LA_COMMON_%(tag)s
#define FFG_LA_COMMON_%(tag)s
/* Linear algebra (%(tag)s): a rows x cols matrix read with element strides (rs, cs) into a
   column-major block whose leading dimension is rows (any layout: transposed, negative or zero
   strides), and a column-major block (leading dimension ld) written out row-major. */
/* The copies walk tiles of FFG_LA_TILE x FFG_LA_TILE elements: a transposing copy touches each
   cache line of the strided side once per tile instead of once per element. */
#ifndef FFG_LA_TILE
#define FFG_LA_TILE 16
#endif
static void ffg_la_load_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    int64_t i, j, i0, j0;
    for (j0 = 0; j0 < cols; j0 += FFG_LA_TILE)
        for (i0 = 0; i0 < rows; i0 += FFG_LA_TILE) {
            const int64_t i1 = i0 + FFG_LA_TILE < rows ? i0 + FFG_LA_TILE : rows;
            const int64_t j1 = j0 + FFG_LA_TILE < cols ? j0 + FFG_LA_TILE : cols;
            for (j = j0; j < j1; ++j)
                for (i = i0; i < i1; ++i)
                    dst[i + j * rows] = src[i * rs + j * cs];
        }
}

static void ffg_la_store_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t rows, int64_t cols, int64_t ld)
{
    int64_t i, j, i0, j0;
    for (i0 = 0; i0 < rows; i0 += FFG_LA_TILE)
        for (j0 = 0; j0 < cols; j0 += FFG_LA_TILE) {
            const int64_t i1 = i0 + FFG_LA_TILE < rows ? i0 + FFG_LA_TILE : rows;
            const int64_t j1 = j0 + FFG_LA_TILE < cols ? j0 + FFG_LA_TILE : cols;
            for (i = i0; i < i1; ++i)
                for (j = j0; j < j1; ++j)
                    dst[i * cols + j] = src[i + j * ld];
        }
}

/* The lower triangle of an n x n matrix (element strides rs, cs) into a column-major block: the
   tiles that touch it (what potrf('L') reads; the rest of the block is left as it was) */
static void ffg_la_load_lower_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t n, int64_t rs, int64_t cs)
{
    int64_t i, j, i0, j0;
    for (j0 = 0; j0 < n; j0 += FFG_LA_TILE)
        for (i0 = j0; i0 < n; i0 += FFG_LA_TILE) {   /* (tiles from the diagonal down) */
            const int64_t i1 = i0 + FFG_LA_TILE < n ? i0 + FFG_LA_TILE : n;
            const int64_t j1 = j0 + FFG_LA_TILE < n ? j0 + FFG_LA_TILE : n;
            for (j = j0; j < j1; ++j)
                for (i = i0; i < i1; ++i)
                    dst[i + j * n] = src[i * rs + j * cs];
        }
}

/* The lower triangle of a column-major n x n block written row-major, zeros above the diagonal */
static void ffg_la_store_lower_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t n)
{
    int64_t i, j, i0, j0;
    for (i0 = 0; i0 < n; i0 += FFG_LA_TILE)
        for (j0 = 0; j0 < n; j0 += FFG_LA_TILE) {
            const int64_t i1 = i0 + FFG_LA_TILE < n ? i0 + FFG_LA_TILE : n;
            const int64_t j1 = j0 + FFG_LA_TILE < n ? j0 + FFG_LA_TILE : n;
            if (j0 >= i1) {   /* wholly above the diagonal */
                for (i = i0; i < i1; ++i)
                    for (j = j0; j < j1; ++j)
                        dst[i * n + j] = 0;
            } else {
                for (i = i0; i < i1; ++i)
                    for (j = j0; j < j1; ++j)
                        dst[i * n + j] = j <= i ? src[i + j * n] : 0;
            }
        }
}

/* ffg_la_load, and whether every element read is finite (1) or not (0): an inf or NaN has every
   exponent bit set, which an integer test finds with no branch and no floating-point chain */
static int ffg_la_load_finite_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t rows, int64_t cols, int64_t rs,
                                      int64_t cs)
{
    const int64_t size = rows * cols;
    int64_t k;
    uint32_t bad = 0;
    ffg_la_load_%(tag)s(dst, src, rows, cols, rs, cs);
    /* on the contiguous copy, a loop the compiler vectorizes: the word holding the exponent (the
       high 32 bits of a double) compared in 32 bits, which SSE2 has */
    for (k = 0; k < size; ++k) {
        %(U)s bits;
        uint32_t word;
        memcpy(&bits, &dst[k], sizeof bits);
        word = (uint32_t)(bits >> %(SHIFT)d);
        bad |= (uint32_t)((word & %(EXP)s) == %(EXP)s);
    }
    return !bad;
}

/* Whether every element of a rows x cols matrix read with element strides (rs, cs) is finite, the
   contiguous axis innermost when there is one (a loop the compiler vectorizes; see above). */
static int ffg_la_finite_%(tag)s(const %(T)s *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    int64_t i, j, inner_n = cols, outer_n = rows, inner_s = cs, outer_s = rs;
    uint32_t bad = 0;
    if (cs != 1 && rs == 1) {
        inner_n = rows; outer_n = cols; inner_s = rs; outer_s = cs;
    }
    for (i = 0; i < outer_n; ++i) {
        const %(T)s *line = src + i * outer_s;
        if (inner_s == 1) {
            for (j = 0; j < inner_n; ++j) {
                %(U)s bits;
                memcpy(&bits, &line[j], sizeof bits);
                bad |= (uint32_t)(((uint32_t)(bits >> %(SHIFT)d) & %(EXP)s) == %(EXP)s);
            }
        } else {
            for (j = 0; j < inner_n; ++j)
                bad |= (uint32_t)!isfinite(line[j * inner_s]);
        }
    }
    return !bad;
}

/* A rows x cols matrix read with element strides (rs, cs) written C-contiguous (a straight copy
   when it is C-contiguous already) */
static void ffg_la_copy_rows_%(tag)s(%(T)s *dst, const %(T)s *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    int64_t i, j;
    for (i = 0; i < rows; ++i)
        for (j = 0; j < cols; ++j)
            dst[i * cols + j] = src[i * rs + j * cs];
}

/* n elements of NaN: the result of a batch entry that failed under on_error='nan' */
static void ffg_la_fill_nan_%(tag)s(%(T)s *dst, int64_t n)
{
    int64_t i;
    for (i = 0; i < n; ++i)
        dst[i] = (%(T)s)NAN;
}
#endif
"""


def library():
    """The BLAS/LAPACK library the C code calls, or None (the ops then have no C code)."""
    from ffigraph.tensor import dot_c

    return blas.library() if dot_c.USE_BLAS else None


def symbol(routine, dtype):
    """The linked name of LAPACK ``routine`` ("potrf") for ``dtype`` ("float64": dpotrf)."""
    lib = library()
    return "%s%s%s_%s" % (lib.prefix, "d" if np.dtype(dtype) == np.float64 else "s", routine, lib.suffix)


def prototype(routine, dtype):
    params, nchar = ROUTINES[routine]
    T = c_element_type(dtype)
    name = symbol(routine, dtype)
    lengths = "".join(", size_t len%d" % k for k in range(nchar))
    guard = "FFG_LAPACK_" + name.upper()
    return "#ifndef %s\n#define %s\nextern void %s(%s%s);\n#endif" % (guard, guard, name, params % dict(T=T),
                                                                      lengths)


def _lib_or_none(op):
    lib = library()
    if lib is None:
        raise MethodNotDefined("%s: no LAPACK (no OpenBLAS at hand; see ffigraph.tensor.blas.why())" % op)
    return lib


def c_libraries(op):
    lib = library()
    return [lib.link_name] if lib is not None else []


def c_lib_dirs(op):
    lib = library()
    return [lib.lib_dir] if lib is not None else []


def c_headers(op):
    return ["<math.h>", "<string.h>"]


def c_code_cache_version(op):
    lib = library()
    which = (lib.origin, lib.prefix, lib.suffix, lib.version) if lib is not None else False
    return VERSION + tuple(getattr(op, "c_version", ())) + (which,)


def _dtype(node):
    return node.inputs[0].type.dtype


def c_support_code_apply(op, node, name):
    _lib_or_none(op)
    dtype = _dtype(node)
    bits = np.dtype(dtype).itemsize * 8
    parts = [COMMON % dict(tag=dtype, T=c_element_type(dtype), U="uint%d_t" % bits, SHIFT=bits - 32,
                           EXP="0x7ff00000u" if bits == 64 else "0x7f800000u")]
    parts += [prototype(r, dtype) for r in op.c_routines(node)]
    extra = op.c_support(node, dtype) if hasattr(op, "c_support") else ""
    if extra:
        parts.append(extra)
    return "\n".join(parts)


class Names(dict):
    """The names the op's C hooks use (see ``c_code``), a dict also readable by attribute."""

    __getattr__ = dict.__getitem__


def _names(op, node, name, inputs, outputs, sub):
    dtype = _dtype(node)
    core_in = op.core_ndims_in()
    d = Names(name=name, T=c_element_type(dtype), tag=dtype, err=sub["err"], fail=sub["fail"],
              al=sub["allocator"], label=c_message(op._label()), what=op._label(), bi="bi")
    d["sym"] = {r: symbol(r, dtype) for r in ROUTINES}
    ins = []
    for k, (var, x, nd) in enumerate(zip(inputs, node.inputs, core_in)):
        first = x.type.ndim - nd
        entry = Names(var=var, ptr="a%d" % k, nb=first, nd=nd,
                      dims=["%s.shape[%d]" % (var, first + j) for j in range(nd)],
                      strides=["%s.strides[%d]" % (var, first + j) for j in range(nd)])
        ins.append(entry)
    d["ins"] = ins
    d["nb"] = max((e.nb for e in ins), default=0)
    core_out = op.c_core_out_shape(node, d)
    outs = []
    for j, (var, z, shape) in enumerate(zip(outputs, node.outputs, core_out)):
        outs.append(Names(var=var, ptr="z%d" % j, ctype=c_element_type(z.type.dtype), dims=list(shape),
                          size="(%s)" % " * ".join("(%s)" % s for s in shape) if shape else "1"))
    d["outs"] = outs
    d["work"] = [Names(var="%s_w%d" % (name, k), name=w[0], ctype=w[1], count=w[2])
                 for k, w in enumerate(op.c_workspace(node, d))]
    return d


def c_code(op, node, name, inputs, outputs, sub):
    _lib_or_none(op)
    d = _names(op, node, name, inputs, outputs, sub)
    nb, ins, outs = d.nb, d.ins, d.outs
    c = _Lines()
    c.add("/* %s: %s */" % (op, "batched over %d leading axes" % nb if nb else "one matrix"))
    c.open()
    c.add("int64_t bshape[%d], bsize = 1, bi;" % max(nb, 1))
    c.add("(void)bshape;")
    if nb:
        c.add("/* the batch shape: each input's batch axes, aligned on the right, broadcast */")
        c.open("{")
        c.add("int64_t n;")
        for a in range(nb):
            c.add("n = 1;")
            for k, e in enumerate(ins):
                ax = a - (nb - e.nb)
                if ax < 0:
                    continue
                c.open("if (%s.shape[%d] != 1) {" % (e.var, ax))
                c.open("if (n != 1 && n != %s.shape[%d]) {" % (e.var, ax))
                c.add('ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: batch axis %d has lengths %%lld and %%lld, which do '
                      'not broadcast", (long long)n, (long long)%s.shape[%d]);' % (d.err, d.label, a, e.var, ax))
                c.add(d.fail)
                c.close()
                c.add("n = %s.shape[%d];" % (e.var, ax))
                c.close()
            c.add("bshape[%d] = n;" % a)
            c.add("bsize *= n;")
        c.close()
    check = op.c_check(node, d) if hasattr(op, "c_check") else ""
    if check:
        c.add("/* the core shapes */")
        c.add(*check.split("\n"))
    c.add("/* the outputs: batch axes, then the core shapes; C-contiguous */")
    for z in outs:
        shape = ["bshape[%d]" % a for a in range(nb)] + z.dims
        c.open("{")
        c.add("const int64_t shape[%d] = {%s};" % (max(len(shape), 1), ", ".join(shape) or "0"))
        c.add("if (ffg_alloc_array(&%s, %d, shape, sizeof(%s), %s, %s))" % (z.var, len(shape), z.ctype, d.al, d.err))
        c.add("    " + d.fail)
        c.close()
    prepare = op.c_prepare(node, d) if hasattr(op, "c_prepare") else ""
    c.open("if (bsize > 0) {")
    if prepare:
        c.add(*prepare.split("\n"))
    for w in d.work:
        c.add("/* workspace: %s */" % w.name)
        c.add("%s = (%s *)ffg_malloc(%s, (size_t)((%s) > 0 ? (%s) : 1) * sizeof(%s));"
              % (w.var, w.ctype, d.al, w.count, w.count, w.ctype))
        c.open("if (%s == NULL) {" % w.var)
        c.add('ffg_set_error(%s, FFG_ERR_NOMEM, -1, "%s: cannot allocate its workspace (%s: %%lld items)", '
              '(long long)(%s));' % (d.err, d.label, c_message(w.name), w.count))
        c.add(d.fail)
        c.close()
    if nb:
        c.add("int64_t idx[%d] = {0};" % nb)
    c.open("for (bi = 0; bi < bsize; ++bi) {")
    for k, e in enumerate(ins):
        terms = ["(%s.shape[%d] == 1 ? 0 : idx[%d]) * %s.strides[%d]" % (e.var, ax, ax + nb - e.nb, e.var, ax)
                 for ax in range(e.nb)]
        c.add("const %s *%s = (const %s *)%s.data + %s;" % (d.T, e.ptr, d.T, e.var, " + ".join(terms) or "0"))
    for z in outs:
        c.add("%s *%s = (%s *)%s.data + bi * %s;" % (z.ctype, z.ptr, z.ctype, z.var, z.size))
    c.open("{")
    c.add(*op.c_core(node, d).split("\n"))
    c.close()
    if nb:
        c.add("/* the next batch index */")
        c.open("{")
        c.add("int a = %d;" % (nb - 1))
        c.add("while (a >= 0 && ++idx[a] == bshape[a])")
        c.add("    idx[a--] = 0;")
        c.close()
    c.close()
    c.close()
    c.close()
    decl = ["%s *%s = NULL;   /* workspace of %s, released by the cleanup */" % (w.ctype, w.var, op) for w in d.work]
    return "\n".join(decl + [c.text()])


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    d = _names(op, node, name, inputs, outputs, sub)
    if not d.work:
        return ""
    return "\n".join(["/* release the workspaces of %s */" % op]
                     + ["ffg_release(%s, %s);" % (d.al, w.var) for w in d.work])


def info_failure(d, routine, message, nan_outputs=None):
    """C lines for ``info > 0`` after ``routine``: FFG_ERR_LINALG with ``message`` (a printf format
    that may use ``info`` as %lld and the batch index as the second %lld), or, when ``nan_outputs``
    (a list of output entries) is given, NaN in those outputs' batch entry."""
    lines = ["if (info < 0) {",
             '    ffg_set_error(%s, FFG_ERR_RUNTIME, -1, "%s: LAPACK %s rejected its argument %%lld", (long long)-info);'
             % (d.err, d.label, routine),
             "    " + d.fail,
             "}"]
    if nan_outputs is not None:
        lines += ["if (info > 0) {"] + ["    ffg_la_fill_nan_%s(%s, %s);" % (d.tag, z.ptr, z.size)
                                        for z in nan_outputs] + ["}"]
    else:
        lines += ["if (info > 0) {",
                  '    ffg_set_error(%s, FFG_ERR_LINALG, -1, "%s: %s", (long long)info, (long long)bi);'
                  % (d.err, d.label, message),
                  "    " + d.fail,
                  "}"]
    return "\n".join(lines)


def square_check_c(d, k=0):
    """C lines: input k's core matrix must be square (FFG_ERR_VALUE naming its shape)."""
    e = d.ins[k]
    return "\n".join([
        "if (%s != %s) {" % (e.dims[0], e.dims[1]),
        '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: input %d must be square, got a %%lld x %%lld matrix", '
        "(long long)%s, (long long)%s);" % (d.err, d.label, k, e.dims[0], e.dims[1]),
        "    " + d.fail,
        "}"])


def rhs_check_c(d, a=0, b=1):
    """C lines: input b's rows match input a's order (FFG_ERR_VALUE naming both)."""
    ea, eb = d.ins[a], d.ins[b]
    return "\n".join([
        "if (%s != %s) {" % (eb.dims[0], ea.dims[0]),
        '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: b has %%lld rows but a is %%lld x %%lld", (long long)%s, '
        "(long long)%s, (long long)%s);" % (d.err, d.label, eb.dims[0], ea.dims[0], ea.dims[1]),
        "    " + d.fail,
        "}"])
