"""Plain-C code of ``Images2Neibs`` (a gather) and ``Neibs2Images`` (its adjoint, a scatter-add).

Both ops read the patch shape and step (and Neibs2Images the image shape) from their int-vector
inputs at run time, check them with ``ffg_neibs_grid`` (the C twin of ``neighbours.patch_grid``:
same checks, order and messages, TypeError or ValueError through the error record), then run a
kernel specialised at generation time for the mode:

* 'valid' / 'ignore_borders': every patch element is inside the image, no test per element;
* 'half' / 'full': a patch row outside the image is zeros; along a row the columns inside form
  one run [jlo, jhi), the rest zeros (Images2Neibs) or skipped (Neibs2Images);
* 'wrap_centered': indices wrap once round the image (the grid makes ``-H < index < 2H``).

The kernel is the node's chunk function (``<name>_chunk`` in ``c_support_code_apply``). With
``config.threads > 1`` large inputs are cut into chunks for the library's pool (threads_c):
Images2Neibs along its output rows (each patch row is written by one chunk), Neibs2Images along
the images (``B * C``): each image's pixels are zeroed and summed by one chunk, patch after patch
in row order, so the sums are the same whatever the number of threads (and match one thread's).
Otherwise the node calls the chunk function once. Strides are in elements and may be negative or
zero; outputs are C-contiguous. Any dtype: bool sums as logical or (numpy's ``add`` on bool).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import c_string
from ffigraph.tensor import threads_c
from ffigraph.tensor.ctype import c_element_type

VERSION = (1,)

_MODE_CODES = {"valid": 0, "ignore_borders": 1, "wrap_centered": 2, "half": 3, "full": 4}

_SUPPORT = r"""
#ifndef FFG_NEIBS_DEFINED
#define FFG_NEIBS_DEFINED
/* ---- neighbours (Images2Neibs, Neibs2Images): the patch grid ----
   Modes: 0 valid, 1 ignore_borders, 2 wrap_centered, 3 half, 4 full. For the image's rows and
   columns (len), the patch (size) and the step: how many patches (count) and how far before the
   image the first one starts (offset: the zero padding of half and full, the centring of
   wrap_centered). 0 on success; -1 with *err set (the messages of neighbours.patch_grid). */
static int ffg_neibs_grid(FfgError *err, const char *op, int mode, const char *mode_name, const char *img,
                          const int64_t *len, const int64_t *size, const int64_t *step,
                          int64_t *count, int64_t *offset)
{
    int k;
    if (size[0] <= 0 || size[1] <= 0) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: neib_shape must be positive, got (%lld, %lld)", op,
                      (long long)size[0], (long long)size[1]);
        return -1;
    }
    if (step[0] <= 0 || step[1] <= 0) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: neib_step must be positive, got (%lld, %lld)", op,
                      (long long)step[0], (long long)step[1]);
        return -1;
    }
    if (mode == 2 && (size[0] % 2 != 1 || size[1] % 2 != 1)) {
        ffg_set_error(err, FFG_ERR_TYPE, -1, "%s: mode 'wrap_centered' needs odd patch sizes, got "
                      "neib_shape=(%lld, %lld)", op, (long long)size[0], (long long)size[1]);
        return -1;
    }
    for (k = 0; k < 2; ++k) {
        const long long n = (long long)len[k], c = (long long)size[k], s = (long long)step[k];
        long long span = 0;
        if (n < c) {
            ffg_set_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld is larger than %s[%d]=%lld: mode '%s' "
                          "needs patches no larger than the image", op, k, c, img, k + 2, n, mode_name);
            return -1;
        }
        if (mode == 2) {   /* the centre of each patch every step, wrapping round: ceil(n / s) patches */
            count[k] = (int64_t)(n / s + (n % s != 0));
            offset[k] = (int64_t)(c / 2);
            continue;
        }
        /* the span the first patch's start may move over: the image, padded, less one patch */
        if (mode == 0 || mode == 1) {
            span = n - c;
            offset[k] = 0;
        } else if (mode == 3) {
            span = n - c % 2;
            offset[k] = (int64_t)(c / 2);
        } else {
            span = n + c - 2;   /* (n >= c >= 1: no overflow below n + n) */
            offset[k] = (int64_t)(c - 1);
        }
        if (mode != 1 && span % s != 0) {
            if (mode == 0)
                ffg_set_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld, neib_step[%d]=%lld and %s[%d]=%lld "
                              "not consistent: mode '%s' needs (%lld - %lld) %% %lld == 0", op, k, c, k, s, img,
                              k + 2, n, mode_name, n, c, s);
            else if (mode == 3)
                ffg_set_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld, neib_step[%d]=%lld and %s[%d]=%lld "
                              "not consistent: mode '%s' needs (%lld - %lld %% 2) %% %lld == 0", op, k, c, k, s,
                              img, k + 2, n, mode_name, n, c, s);
            else
                ffg_set_error(err, FFG_ERR_TYPE, -1, "%s: neib_shape[%d]=%lld, neib_step[%d]=%lld and %s[%d]=%lld "
                              "not consistent: mode '%s' needs (%lld + %lld - 2) %% %lld == 0", op, k, c, k, s,
                              img, k + 2, n, mode_name, n, c, s);
            return -1;
        }
        count[k] = (int64_t)(1 + span / s);
    }
    return 0;
}

/* a * b * c * d into *out; 1 when it overflows an int64 (all non-negative). */
static int ffg_neibs_product(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out)
{
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p) || __builtin_mul_overflow(p, c, &p) || __builtin_mul_overflow(p, d, &p))
        return 1;
    *out = p;
    return 0;
}
#endif /* FFG_NEIBS_DEFINED */
"""


def _threaded(op, node):
    return threads_c.worth_threads(node.outputs[0].type.shape)


def _read_vector(lines, op, node, index, var, what, n, target, sub):
    """C: check that input ``var`` holds ``n`` values and read them into ``target[0..n)``."""
    itype = c_element_type(node.inputs[index].type.dtype)
    lines.append("if (%s.shape[0] != %d) {" % (var, n))
    lines.append('    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%%s: %s must hold %d values, got %%lld", %s, '
                 "(long long)%s.shape[0]);" % (sub["err"], what, n, c_string(op), var))
    lines.append("    " + sub["fail"])
    lines.append("}")
    for k in range(n):
        # (a uint64 above INT64_MAX wraps negative: refused as not positive)
        lines.append("%s[%d] = (int64_t)((const %s *)%s.data)[%d * %s.strides[0]];" % (target, k, itype, var, k, var))


def _loop_struct(name, threaded, fields):
    lines = ["typedef struct %s_loop {" % name]
    lines += ["    " + f for f in fields]
    lines.append("    int64_t size[2], step[2], count[2], offset[2];   /* patch (c, d), step, grid, padding */")
    if threaded:
        lines.append("    ffg_split split;   /* how the work is cut (threads_c) */")
    lines.append("} %s_loop;" % name)
    return lines


def _row_index(mode, var, start, length):
    """C lines that turn ``var`` (``start`` + i) into an index inside the image, for wrap_centered."""
    if mode != "wrap_centered":
        return []
    return ["if (%s < 0)" % var, "    %s += %s;" % (var, length), "else if (%s >= %s)" % (var, length),
            "    %s -= %s;" % (var, length)]


def _images2neibs_chunk(op, node, name, threaded):
    mode = op.mode
    T = c_element_type(node.inputs[0].type.dtype)
    zero = "(%s)0" % T
    lines = ["/* %s: %s -- patch rows [lo, hi) of the output, each gathered from its image */" % (name, op)]
    lines += _loop_struct(name, threaded, ["const ffg_array *x;", "ffg_array *z;"])
    lines += ["", "static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name, "{"]
    body = ["const %s_loop *L = (const %s_loop *)ctx;" % (name, name),
            "const ffg_array *x = L->x;",
            "const %s *xp = (const %s *)x->data;" % (T, T),
            "%s *zp = (%s *)L->z->data;" % (T, T),
            "const int64_t c = L->size[0], d = L->size[1], gc = L->count[0], gd = L->count[1];",
            "const int64_t S = x->shape[1], H = x->shape[2], W = x->shape[3];",
            "const int64_t xs0 = x->strides[0], xs1 = x->strides[1], xs2 = x->strides[2], xs3 = x->strides[3];",
            "int64_t lo = 0, hi = L->z->shape[0], p, a, b, s, n;",
            "const %s *xi;" % T]
    if threaded:
        body += ["if (L->split.n > 1)", "    ffg_split_range(&L->split, chunk, L->z->shape[0], &lo, &hi);"]
    body += ["(void)H; (void)W; (void)chunk; (void)err;",
             "if (lo >= hi)",
             "    return 0;",
             "/* row p = ((image * gc) + a) * gd + b: patch (a, b) of image (n, s), image = n * S + s; the",
             "   counters are divided out of lo once, then stepped (a division per row costs more than",
             "   copying a small patch) */",
             "b = lo % gd;",
             "a = (lo / gd) % gc;",
             "s = (lo / gd / gc) % S;",
             "n = lo / gd / gc / S;",
             "xi = xp + n * xs0 + s * xs1;",
             "for (p = lo; p < hi; ++p) {",
             "    %s *zr = zp + p * c * d;" % T,
             "    const int64_t r0 = a * L->step[0] - L->offset[0], q0 = b * L->step[1] - L->offset[1];",
             "    int64_t i, j;",
             "    for (i = 0; i < c; ++i) {",
             "        %s *zo = zr + i * d;" % T,
             "        int64_t r = r0 + i;"]
    inner = []
    if mode in ("half", "full"):
        inner += ["if (r < 0 || r >= H) {   /* a row of padding */",
                  "    for (j = 0; j < d; ++j)",
                  "        zo[j] = %s;" % zero,
                  "    continue;",
                  "}",
                  "{",
                  "    const %s *xr = xi + r * xs2;" % T,
                  "    /* the columns inside the image: [jlo, jhi); padding on either side */",
                  "    const int64_t jlo = q0 < 0 ? -q0 : 0;",
                  "    int64_t jhi = W - q0 < d ? W - q0 : d;",
                  "    if (jhi < jlo)",
                  "        jhi = jlo;",
                  "    for (j = 0; j < jlo; ++j)",
                  "        zo[j] = %s;" % zero,
                  "    for (j = jlo; j < jhi; ++j)",
                  "        zo[j] = xr[(q0 + j) * xs3];",
                  "    for (j = jhi; j < d; ++j)",
                  "        zo[j] = %s;" % zero,
                  "}"]
    elif mode == "wrap_centered":
        inner += _row_index(mode, "r", "r0", "H")
        inner += ["{",
                  "    const %s *xr = xi + r * xs2;" % T,
                  "    for (j = 0; j < d; ++j) {",
                  "        int64_t q = q0 + j;   /* wrapped round the columns */",
                  "        if (q < 0)",
                  "            q += W;",
                  "        else if (q >= W)",
                  "            q -= W;",
                  "        zo[j] = xr[q * xs3];",
                  "    }",
                  "}"]
    else:
        inner += ["{   /* valid, ignore_borders: every element is inside the image */",
                  "    const %s *xr = xi + r * xs2 + q0 * xs3;" % T,
                  "    if (xs3 == 1) {",
                  "        for (j = 0; j < d; ++j)",
                  "            zo[j] = xr[j];",
                  "    } else {",
                  "        for (j = 0; j < d; ++j)",
                  "            zo[j] = xr[j * xs3];",
                  "    }",
                  "}"]
    body += ["        " + ln for ln in inner]
    body += ["    }",
             "    /* the next patch: along the row of patches, then down, then the next image */",
             "    if (++b == gd) {",
             "        b = 0;",
             "        if (++a == gc) {",
             "            a = 0;",
             "            if (++s == S) {",
             "                s = 0;",
             "                ++n;",
             "            }",
             "            if (p + 1 < hi)   /* (not past the last image) */",
             "                xi = xp + n * xs0 + s * xs1;",
             "        }",
             "    }",
             "}",
             "return 0;"]
    return "\n".join(lines + ["    " + ln for ln in body] + ["}"])


def _neibs2images_chunk(op, node, name, threaded):
    mode = op.mode
    dtype = node.inputs[0].type.dtype
    T = c_element_type(dtype)
    add = ("o[%s] = (%s)(o[%s] | v);" if np.dtype(dtype).kind == "b" else "o[%s] += v;")

    def acc(index):
        return add % (index, T, index) if np.dtype(dtype).kind == "b" else add % index

    lines = ["/* %s: %s -- images [lo, hi) of the output, each zeroed then summed from its patches, "
             "in patch order */" % (name, op)]
    lines += _loop_struct(name, threaded, ["const ffg_array *g;", "ffg_array *z;"])
    lines += ["", "static int %s_chunk(void *ctx, int chunk, FfgError *err)" % name, "{"]
    body = ["const %s_loop *L = (const %s_loop *)ctx;" % (name, name),
            "const ffg_array *g = L->g;",
            "const %s *gp = (const %s *)g->data;" % (T, T),
            "%s *zp = (%s *)L->z->data;" % (T, T),
            "const int64_t c = L->size[0], d = L->size[1], gc = L->count[0], gd = L->count[1];",
            "const int64_t H = L->z->shape[2], W = L->z->shape[3];",
            "const int64_t gs0 = g->strides[0], gs1 = g->strides[1];",
            "int64_t lo = 0, hi = L->z->shape[0] * L->z->shape[1], image;"]
    if threaded:
        body += ["if (L->split.n > 1)", "    ffg_split_range(&L->split, chunk, hi, &lo, &hi);"]
    body += ["(void)chunk; (void)err;",
             "for (image = lo; image < hi; ++image) {",
             "    %s *zi = zp + image * H * W;   /* C-contiguous */" % T,
             "    int64_t a, b, i, j;",
             "    memset(zi, 0, (size_t)(H * W) * sizeof(%s));" % T,
             "    for (a = 0; a < gc; ++a)",
             "    for (b = 0; b < gd; ++b) {",
             "        const %s *gr = gp + ((image * gc + a) * gd + b) * gs0;   /* patch (a, b) */" % T,
             "        const int64_t r0 = a * L->step[0] - L->offset[0], q0 = b * L->step[1] - L->offset[1];",
             "        for (i = 0; i < c; ++i) {",
             "            const %s *gi = gr + i * d * gs1;" % T,
             "            int64_t r = r0 + i;"]
    inner = []
    if mode in ("half", "full"):
        inner += ["if (r < 0 || r >= H)   /* padding: read as zero, nothing to give back */",
                  "    continue;",
                  "{",
                  "    %s *o = zi + r * W;" % T,
                  "    const int64_t jlo = q0 < 0 ? -q0 : 0;",
                  "    const int64_t jhi = W - q0 < d ? W - q0 : d;",
                  "    for (j = jlo; j < jhi; ++j) {",
                  "        const %s v = gi[j * gs1];" % T,
                  "        " + acc("q0 + j"),
                  "    }",
                  "}"]
    elif mode == "wrap_centered":
        inner += _row_index(mode, "r", "r0", "H")
        inner += ["{",
                  "    %s *o = zi + r * W;" % T,
                  "    for (j = 0; j < d; ++j) {",
                  "        const %s v = gi[j * gs1];" % T,
                  "        int64_t q = q0 + j;",
                  "        if (q < 0)",
                  "            q += W;",
                  "        else if (q >= W)",
                  "            q -= W;",
                  "        " + acc("q"),
                  "    }",
                  "}"]
    else:
        inner += ["{   /* valid, ignore_borders: every element is inside the image */",
                  "    %s *o = zi + r * W + q0;" % T,
                  "    for (j = 0; j < d; ++j) {",
                  "        const %s v = gi[j * gs1];" % T,
                  "        " + acc("j"),
                  "    }",
                  "}"]
    body += ["            " + ln for ln in inner]
    body += ["        }", "    }", "}", "return 0;"]
    return "\n".join(lines + ["    " + ln for ln in body] + ["}"])


def _run(lines, name, threaded, split_shape, sub):
    """C at the node: the chunks over the pool, or the one chunk on this thread."""
    if threaded:
        lines.append("ffg_split_loop(&L.split, 2, %s, 1, 0x1ULL, 0, 0);   /* cut the first axis only */"
                     % split_shape)
        lines += threads_c.run_chunks(name, "L", sub)
    else:
        lines += ["if (%s_chunk(&L, 0, %s))" % (name, sub["err"]), "    " + sub["fail"]]


def _images2neibs_code(op, node, name, inputs, outputs, sub):
    x, shape_v, step_v = inputs
    (z,) = outputs
    T = c_element_type(node.inputs[0].type.dtype)
    threaded = _threaded(op, node)
    err = sub["err"]
    lines = ["/* %s: every patch of every image of %s as one row of %s */" % (op, x, z), "{",
             "%s_loop L;" % name,
             "int64_t len[2], zshape[2], split_shape[2];"]
    _read_vector(lines, op, node, 1, shape_v, "neib_shape", 2, "L.size", sub)
    _read_vector(lines, op, node, 2, step_v, "neib_step", 2, "L.step", sub)
    lines += ["len[0] = %s.shape[2];" % x,
              "len[1] = %s.shape[3];" % x,
              'if (ffg_neibs_grid(%s, %s, %d, "%s", "ten4.shape", len, L.size, L.step, L.count, L.offset))'
              % (err, c_string(op), _MODE_CODES[op.mode], op.mode),
              "    " + sub["fail"],
              "/* (c * d <= H * W: no overflow; the row count is checked) */",
              "zshape[1] = L.size[0] * L.size[1];",
              "if (ffg_neibs_product(%s.shape[0], %s.shape[1], L.count[0], L.count[1], &zshape[0])) {" % (x, x),
              '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%%s: too many patches", %s);' % (err, c_string(op)),
              "    " + sub["fail"],
              "}",
              "if (ffg_alloc_array(&%s, 2, zshape, sizeof(%s), %s, %s))" % (z, T, sub["allocator"], err),
              "    " + sub["fail"],
              "L.x = &%s;" % x,
              "L.z = &%s;" % z,
              "split_shape[0] = zshape[0];",
              "split_shape[1] = zshape[1];",
              "(void)split_shape;"]
    _run(lines, name, threaded, "split_shape", sub)
    lines.append("}")
    return "\n".join(lines)


def _neibs2images_code(op, node, name, inputs, outputs, sub):
    g, shape_v, step_v, orig_v = inputs
    (z,) = outputs
    T = c_element_type(node.inputs[0].type.dtype)
    threaded = _threaded(op, node)
    err = sub["err"]
    lines = ["/* %s: the patches of %s added back to the pixels they came from */" % (op, g), "{",
             "%s_loop L;" % name,
             "int64_t zshape[4], expected, cols, split_shape[2];"]
    _read_vector(lines, op, node, 1, shape_v, "neib_shape", 2, "L.size", sub)
    _read_vector(lines, op, node, 2, step_v, "neib_step", 2, "L.step", sub)
    _read_vector(lines, op, node, 3, orig_v, "original_shape", 4, "zshape", sub)
    lines += ["if (zshape[0] < 0 || zshape[1] < 0 || zshape[2] < 0 || zshape[3] < 0) {",
              '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%%s: original_shape must not be negative, got (%%lld, %%lld, '
              '%%lld, %%lld)", %s, (long long)zshape[0], (long long)zshape[1], (long long)zshape[2], '
              "(long long)zshape[3]);" % (err, c_string(op)),
              "    " + sub["fail"],
              "}",
              'if (ffg_neibs_grid(%s, %s, %d, "%s", "original_shape", zshape + 2, L.size, L.step, L.count, L.offset))'
              % (err, c_string(op), _MODE_CODES[op.mode], op.mode),
              "    " + sub["fail"],
              "/* the patch matrix must be the one Images2Neibs gives for these images */",
              "if (ffg_neibs_product(zshape[0], zshape[1], L.count[0], L.count[1], &expected))",
              "    expected = -1;   /* more rows than an array can have: never equal */",
              "if (__builtin_mul_overflow(L.size[0], L.size[1], &cols))",
              "    cols = -1;   /* (sizes of up to original_shape's, which nothing bounds) */",
              "if (%s.shape[0] != expected || %s.shape[1] != cols) {" % (g, g),
              '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%%s: neibs has shape (%%lld, %%lld), but images of shape '
              '(%%lld, %%lld, %%lld, %%lld) have (%%lld, %%lld) patches of neib_shape=(%%lld, %%lld), '
              'neib_step=(%%lld, %%lld)", %s, (long long)%s.shape[0], (long long)%s.shape[1], (long long)zshape[0], '
              "(long long)zshape[1], (long long)zshape[2], (long long)zshape[3], (long long)expected, "
              "(long long)cols, (long long)L.size[0], (long long)L.size[1], (long long)L.step[0], "
              "(long long)L.step[1]);" % (err, c_string(op), g, g),
              "    " + sub["fail"],
              "}",
              "if (ffg_alloc_array(&%s, 4, zshape, sizeof(%s), %s, %s))" % (z, T, sub["allocator"], err),
              "    " + sub["fail"],
              "L.g = &%s;" % g,
              "L.z = &%s;" % z,
              "split_shape[0] = zshape[0] * zshape[1];   /* the images: one chunk sums each */",
              "split_shape[1] = zshape[2] * zshape[3];",
              "(void)split_shape;"]
    _run(lines, name, threaded, "split_shape", sub)
    lines.append("}")
    return "\n".join(lines)


# ------------------------------------------------------------------ the DelegatedCOp interface


def c_code(op, node, name, inputs, outputs, sub):
    if type(op).__name__ == "Images2Neibs":
        return _images2neibs_code(op, node, name, inputs, outputs, sub)
    return _neibs2images_code(op, node, name, inputs, outputs, sub)


def c_support_code(op):
    return threads_c.pool_support_code() + _SUPPORT


def c_support_code_apply(op, node, name):
    threaded = _threaded(op, node)
    if type(op).__name__ == "Images2Neibs":
        return _images2neibs_chunk(op, node, name, threaded)
    return _neibs2images_chunk(op, node, name, threaded)


def c_headers(op):
    return ["<string.h>"]


def c_compile_args(op):
    return threads_c.compile_args()


def c_code_cache_version(op):
    return VERSION
