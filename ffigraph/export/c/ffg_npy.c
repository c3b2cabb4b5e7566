/*
 * ffg_npy.c -- a small, strict reader and writer of numpy's .npy format.
 *
 * A .npy file (numpy/lib/format.py) is
 *   the magic "\x93NUMPY", a major and a minor version byte,
 *   the header length: uint16 little-endian in version 1.0, uint32 in 2.0 and 3.0,
 *   the header: a Python dict literal such as
 *       {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
 *     padded with spaces and ending in '\n',
 *   the elements, raw: exactly prod(shape) * itemsize bytes.
 *
 * Element bytes are copied as they lie in the file and in memory, never
 * converted, so the host must be little-endian like the files.
 */
#include "ffg_npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ffg_npy.c copies little-endian .npy data as it is and needs a little-endian host"
#endif

#if defined(__GNUC__)
#define NPY_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define NPY_PRINTF(fmt, args)
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_PREFIX_V1 (NPY_MAGIC_LEN + 2 + 2)   /* magic, version, uint16 header length */
#define NPY_ALIGN 64                /* numpy pads headers so that the data starts 64-byte aligned */
#define NPY_MAX_HEADER (1u << 20)   /* far beyond what 32 dimensions need; bounds a hostile length */
#define NPY_DESCR_MAX 64            /* longer descrs are cut; none of them is supported anyway */
#define NPY_EXCERPT 60              /* characters of the header quoted in a message */
#define NPY_SHAPE_TEXT (FFG_MAX_NDIM * 22 + 4)    /* "(d, d, ...)" with 20-digit dims */
/* The writer's header: prefix, the dict's fixed text and descr (under 64), the shape, padding. */
#define NPY_HEADER_TEXT (NPY_PREFIX_V1 + 64 + NPY_SHAPE_TEXT + NPY_ALIGN)

/* The dtypes the ABI has, spelled as numpy spells them on little-endian machines. */
typedef struct NpyType {
    const char *descr;
    uint8_t code;
    uint8_t bits;
} NpyType;

static const NpyType npy_types[] = {
    {"|b1", FFG_DTYPE_BOOL, 8},
    {"|i1", FFG_DTYPE_INT, 8},
    {"<i2", FFG_DTYPE_INT, 16},
    {"<i4", FFG_DTYPE_INT, 32},
    {"<i8", FFG_DTYPE_INT, 64},
    {"|u1", FFG_DTYPE_UINT, 8},
    {"<u2", FFG_DTYPE_UINT, 16},
    {"<u4", FFG_DTYPE_UINT, 32},
    {"<u8", FFG_DTYPE_UINT, 64},
    {"<f4", FFG_DTYPE_FLOAT, 32},
    {"<f8", FFG_DTYPE_FLOAT, 64},
    {"<c8", FFG_DTYPE_COMPLEX, 64},
    {"<c16", FFG_DTYPE_COMPLEX, 128},
};

#define NPY_N_TYPES (sizeof npy_types / sizeof npy_types[0])

/* What the reader takes from the header dict. */
typedef struct NpyHeader {
    char descr[NPY_DESCR_MAX];      /* a string's contents, or a structured dtype's list as text */
    int fortran_order;
    int ndim;                       /* may exceed FFG_MAX_NDIM: only that many dims are kept */
    int64_t shape[FFG_MAX_NDIM];
    unsigned seen;                  /* NPY_KEY_* bits of the keys met so far */
} NpyHeader;

enum { NPY_KEY_DESCR = 1, NPY_KEY_FORTRAN = 2, NPY_KEY_SHAPE = 4 };

/* ------------------------------------------------------------------ errors */

static void clear_error(FfgError *err)
{
    if (err == NULL)
        return;
    err->code = FFG_OK;
    err->node = -1;
    err->input = -1;
    err->detail = 0;
    err->message[0] = '\0';
}

/* Records a failure in err (when there is one) and returns its code. */
static int32_t fail(FfgError *err, int32_t code, const char *fmt, ...) NPY_PRINTF(3, 4);

static int32_t fail(FfgError *err, int32_t code, const char *fmt, ...)
{
    va_list args;

    if (err == NULL)
        return code;
    va_start(args, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, args);
    va_end(args);
    err->code = code;
    return code;
}

/*
 * Up to NPY_EXCERPT characters of s for quoting in a message: the header's
 * padding is trimmed, control bytes become '?', and a cut ends in "...".
 */
static const char *excerpt(const char *s, char *buf, size_t size)
{
    size_t len = strlen(s), n;

    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\n'))
        len--;
    for (n = 0; n < len && n + 4 < size; n++) {
        unsigned char c = (unsigned char)s[n];
        buf[n] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    if (n < len) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

/* A shape as Python prints a tuple: (), (5,), (3, 4). */
static const char *format_shape(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    int i;

    for (i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
    return buf;
}

/* ------------------------------------------------------------------ dtypes */

static const NpyType *find_descr(const char *descr)
{
    size_t i;

    for (i = 0; i < NPY_N_TYPES; i++)
        if (strcmp(npy_types[i].descr, descr) == 0)
            return &npy_types[i];
    return NULL;
}

const char *ffg_npy_descr(FfgDtype dtype)
{
    size_t i;

    if (dtype.lanes != 1)
        return NULL;
    for (i = 0; i < NPY_N_TYPES; i++)
        if (npy_types[i].code == dtype.code && npy_types[i].bits == dtype.bits)
            return npy_types[i].descr;
    return NULL;
}

/* ">f8" is refused with advice of its own when "<f8" would have been accepted. */
static int is_big_endian_of_supported(const char *descr)
{
    char little[NPY_DESCR_MAX];

    if (descr[0] != '>')
        return 0;
    strcpy(little, descr);      /* both are NPY_DESCR_MAX long */
    little[0] = '<';
    return find_descr(little) != NULL;
}

static int32_t check_dtype(const char *path, const char *descr, FfgDtype *dtype, FfgError *err)
{
    const NpyType *type = find_descr(descr);
    char supported[128];
    size_t used = 0, i;

    if (type != NULL) {
        dtype->code = type->code;
        dtype->bits = type->bits;
        dtype->lanes = 1;
        return FFG_OK;
    }
    if (is_big_endian_of_supported(descr))
        return fail(err, FFG_ERR_TYPE,
                    "'%s' holds big-endian data (dtype '%s'); "
                    "save it with arr.astype(arr.dtype.newbyteorder('<'))", path, descr);
    for (i = 0; i < NPY_N_TYPES && used < sizeof supported; i++)
        used += (size_t)snprintf(supported + used, sizeof supported - used, "%s%s",
                                 i ? ", " : "", npy_types[i].descr);
    return fail(err, FFG_ERR_TYPE, "'%s': dtype '%s' is not supported by the ffigraph ABI (supported: %s)",
                path, descr, supported);
}

/* ------------------------------------------------------------------ sizes */

/*
 * prod(shape) * itemsize, or -1 when that does not fit in int64. Each factor is
 * checked before it is multiplied in, so the overflow never happens. An empty
 * dimension makes the product 0 whatever the others are. Dims must be >= 0.
 */
static int64_t checked_nbytes(const int64_t *shape, int ndim, int64_t itemsize)
{
    int64_t total = itemsize;
    int i;

    for (i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return 0;
    for (i = 0; i < ndim; i++) {
        if (total > INT64_MAX / shape[i])
            return -1;
        total *= shape[i];
    }
    return total;
}

/* The checks the reader and the writer share: ndim, dims, total size. */
static int32_t check_shape(const char *path, const int64_t *shape, int ndim, const char *descr,
                           int64_t itemsize, int64_t *nbytes, FfgError *err)
{
    char text[NPY_SHAPE_TEXT];
    int i;

    if (ndim < 0 || ndim > FFG_MAX_NDIM)
        return fail(err, FFG_ERR_TYPE, "'%s': %d dimensions; the ffigraph ABI allows 0 to %d (FFG_MAX_NDIM)",
                    path, ndim, FFG_MAX_NDIM);
    if (ndim > 0 && shape == NULL)
        return fail(err, FFG_ERR_VALUE, "'%s': shape is NULL but ndim is %d", path, ndim);
    for (i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return fail(err, FFG_ERR_VALUE, "'%s': dimension %d is negative (%lld)",
                        path, i, (long long)shape[i]);
    *nbytes = checked_nbytes(shape, ndim, itemsize);
    if (*nbytes < 0)
        return fail(err, FFG_ERR_VALUE, "'%s': shape %s of dtype '%s' needs more than 2**63-1 bytes",
                    path, format_shape(shape, ndim, text, sizeof text), descr);
    return FFG_OK;
}

/* ------------------------------------------------------------------ header parsing */

/*
 * A recursive-descent parser for the one dict literal numpy writes, kept as
 * lenient as Python is about spacing, key order, quotes and trailing commas.
 * Each parse_* function advances the cursor *p and returns NULL, or a short
 * description of what it expected, leaving *p where it stopped.
 */

static void skip_space(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        ++*p;
}

/* Consumes c, after any white space, when it comes next. */
static int accept(const char **p, char c)
{
    skip_space(p);
    if (**p != c)
        return 0;
    ++*p;
    return 1;
}

/* A quoted string without escapes ('...' or "..."), copied into buf and cut to fit. */
static const char *parse_string(const char **p, char *buf, size_t size)
{
    char quote;
    size_t n = 0;

    skip_space(p);
    quote = **p;
    if (quote != '\'' && quote != '"')
        return "expected a quoted string";
    for (++*p; **p != quote; ++*p) {
        if (**p == '\0')
            return "unterminated string";
        if (**p == '\\')
            return "escapes in strings are not supported";
        if (n + 1 < size)
            buf[n++] = **p;
    }
    ++*p;
    buf[n] = '\0';
    return NULL;
}

/* A structured dtype's descr is a list of tuples: keep its text for the message that refuses it. */
static const char *parse_list_text(const char **p, char *buf, size_t size)
{
    const char *start = *p;
    char quote = 0;
    int depth = 0;
    size_t n;

    do {
        char c = **p;
        if (c == '\0')
            return "unterminated list";
        if (quote != 0)
            quote = (c == quote) ? 0 : quote;
        else if (c == '\'' || c == '"')
            quote = c;
        else if (c == '[' || c == '(')
            depth++;
        else if (c == ']' || c == ')')
            depth--;
        ++*p;
    } while (depth > 0);
    n = (size_t)(*p - start);
    if (n >= size) {
        n = size - 1;
        memcpy(buf + n - 3, "...", 3);
        memcpy(buf, start, n - 3);
    } else {
        memcpy(buf, start, n);
    }
    buf[n] = '\0';
    return NULL;
}

static const char *parse_descr(const char **p, NpyHeader *h)
{
    skip_space(p);
    if (**p == '[')
        return parse_list_text(p, h->descr, sizeof h->descr);
    return parse_string(p, h->descr, sizeof h->descr);
}

static const char *parse_bool(const char **p, int *value)
{
    skip_space(p);
    if (strncmp(*p, "True", 4) == 0) {
        *value = 1;
        *p += 4;
    } else if (strncmp(*p, "False", 5) == 0) {
        *value = 0;
        *p += 5;
    } else {
        return "expected True or False";
    }
    return NULL;
}

/*
 * One dimension, a decimal integer. A minus sign is taken so that the
 * message can say "negative" rather than "cannot parse"; Python 2's 'L'
 * suffix is taken because numpy still reads old files that have it.
 */
static const char *parse_dim(const char **p, int64_t *value)
{
    int negative = accept(p, '-');
    int64_t v = 0;

    skip_space(p);
    if (**p < '0' || **p > '9')
        return "expected a dimension";
    for (; **p >= '0' && **p <= '9'; ++*p) {
        int digit = **p - '0';
        if (v > (INT64_MAX - digit) / 10)
            return "a dimension does not fit in 64 bits";
        v = v * 10 + digit;
    }
    if (**p == 'L')
        ++*p;
    *value = negative ? -v : v;
    return NULL;
}

static const char *parse_shape(const char **p, NpyHeader *h)
{
    int trailing_comma = 0;

    h->ndim = 0;
    if (!accept(p, '('))
        return "expected a tuple";
    while (!accept(p, ')')) {
        int64_t dim;
        const char *problem = parse_dim(p, &dim);
        if (problem != NULL)
            return problem;
        if (h->ndim < FFG_MAX_NDIM)
            h->shape[h->ndim] = dim;
        h->ndim++;
        trailing_comma = accept(p, ',');
        if (!trailing_comma) {
            if (!accept(p, ')'))
                return "expected ',' or ')' in the shape";
            break;
        }
    }
    /* (5) is the number 5 in Python, not a shape. */
    if (h->ndim == 1 && !trailing_comma)
        return "a 1-d shape is written (n,)";
    return NULL;
}

/* One 'key': value pair; each of the three keys may come once, no other key at all. */
static const char *parse_entry(const char **p, NpyHeader *h)
{
    const char *start, *problem;
    char key[32];
    unsigned bit;

    skip_space(p);
    start = *p;
    problem = parse_string(p, key, sizeof key);
    if (problem != NULL)
        return problem;
    if (strcmp(key, "descr") == 0)
        bit = NPY_KEY_DESCR;
    else if (strcmp(key, "fortran_order") == 0)
        bit = NPY_KEY_FORTRAN;
    else if (strcmp(key, "shape") == 0)
        bit = NPY_KEY_SHAPE;
    else
        bit = 0;
    if (bit == 0 || (h->seen & bit) != 0) {
        *p = start;
        return bit == 0 ? "unexpected key" : "repeated key";
    }
    h->seen |= bit;
    if (!accept(p, ':'))
        return "expected ':' after the key";
    if (bit == NPY_KEY_DESCR)
        return parse_descr(p, h);
    if (bit == NPY_KEY_FORTRAN)
        return parse_bool(p, &h->fortran_order);
    return parse_shape(p, h);
}

static const char *parse_dict(const char **p, NpyHeader *h)
{
    if (!accept(p, '{'))
        return "expected a dict";
    while (!accept(p, '}')) {
        const char *problem = parse_entry(p, h);
        if (problem != NULL)
            return problem;
        if (!accept(p, ',')) {
            if (!accept(p, '}'))
                return "expected ',' or '}'";
            break;
        }
    }
    skip_space(p);
    return **p == '\0' ? NULL : "unexpected text after the dict";
}

static int32_t parse_header(const char *path, const char *text, NpyHeader *h, FfgError *err)
{
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    const char *p = text, *problem;
    char quoted[NPY_EXCERPT + 4];
    int i;

    memset(h, 0, sizeof *h);
    problem = parse_dict(&p, h);
    if (problem != NULL) {
        skip_space(&p);
        if (*p == '\0')
            return fail(err, FFG_ERR_VALUE, "'%s': cannot parse the .npy header (%s): it ends early: \"%s\"",
                        path, problem, excerpt(text, quoted, sizeof quoted));
        return fail(err, FFG_ERR_VALUE, "'%s': cannot parse the .npy header (%s) at \"%s\"",
                    path, problem, excerpt(p, quoted, sizeof quoted));
    }
    for (i = 0; i < 3; i++)
        if ((h->seen & (1u << i)) == 0)
            return fail(err, FFG_ERR_VALUE, "'%s': the .npy header has no '%s' key: \"%s\"",
                        path, keys[i], excerpt(text, quoted, sizeof quoted));
    return FFG_OK;
}

/* ------------------------------------------------------------------ reading */

/* Says why fewer bytes came than asked for: a read error, or the file ends inside `part`. */
static int32_t short_read(FILE *f, const char *path, const char *part, FfgError *err)
{
    if (ferror(f))
        return fail(err, FFG_ERR_VALUE, "cannot read '%s': %s", path, strerror(errno));
    return fail(err, FFG_ERR_VALUE, "'%s' is not a complete .npy file: it ends inside the %s", path, part);
}

/* The fixed start of the file: magic, version and the length of the header that follows. */
static int32_t read_preamble(FILE *f, const char *path, uint32_t *header_len, FfgError *err)
{
    unsigned char pre[NPY_MAGIC_LEN + 2], len[4];
    size_t got = fread(pre, 1, sizeof pre, f), len_size;
    unsigned major, minor;

    if (got < NPY_MAGIC_LEN && ferror(f))
        return short_read(f, path, "magic", err);
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return fail(err, FFG_ERR_VALUE, "'%s' is not a .npy file: it does not start with \"\\x93NUMPY\"", path);
    if (got < sizeof pre)
        return short_read(f, path, "format version", err);
    major = pre[NPY_MAGIC_LEN];
    minor = pre[NPY_MAGIC_LEN + 1];
    if (major == 1 && minor == 0)
        len_size = 2;
    else if ((major == 2 || major == 3) && minor == 0)
        len_size = 4;   /* 3.0 differs from 2.0 only in allowing utf-8 in the header */
    else
        return fail(err, FFG_ERR_VALUE, "'%s': .npy format version %u.%u is not supported (supported: 1.0, 2.0, 3.0)",
                    path, major, minor);
    if (fread(len, 1, len_size, f) != len_size)
        return short_read(f, path, "header length", err);
    *header_len = len[0] | (uint32_t)len[1] << 8;
    if (len_size == 4)
        *header_len |= (uint32_t)len[2] << 16 | (uint32_t)len[3] << 24;
    return FFG_OK;
}

/* Reads and parses everything before the data. */
static int32_t read_header(FILE *f, const char *path, NpyHeader *h, FfgError *err)
{
    uint32_t len = 0;
    char *text;
    int32_t rc = read_preamble(f, path, &len, err);

    if (rc != FFG_OK)
        return rc;
    if (len > NPY_MAX_HEADER)
        return fail(err, FFG_ERR_VALUE, "'%s': the header claims %lu bytes, more than any .npy header needs (%lu)",
                    path, (unsigned long)len, (unsigned long)NPY_MAX_HEADER);
    text = (char *)malloc((size_t)len + 1);
    if (text == NULL)
        return fail(err, FFG_ERR_NOMEM, "'%s': cannot allocate %lu bytes for the header", path, (unsigned long)len + 1);
    if (fread(text, 1, len, f) != len)
        rc = short_read(f, path, "header", err);
    else if (memchr(text, '\0', len) != NULL)
        rc = fail(err, FFG_ERR_VALUE, "'%s': the .npy header contains a NUL byte", path);
    else {
        text[len] = '\0';
        rc = parse_header(path, text, h, err);
    }
    free(text);
    return rc;
}

/* What the header says, checked against what the ABI can hold. */
static int32_t check_header(const char *path, const NpyHeader *h, FfgDtype *dtype, int64_t *nbytes, FfgError *err)
{
    int32_t rc = check_dtype(path, h->descr, dtype, err);

    if (rc != FFG_OK)
        return rc;
    if (h->fortran_order)
        return fail(err, FFG_ERR_TYPE, "'%s' is stored in Fortran order; save it with "
                    "np.save(path, np.ascontiguousarray(arr))", path);
    return check_shape(path, h->shape, h->ndim, h->descr, dtype->bits / 8, nbytes, err);
}

static int32_t size_mismatch(const char *path, const NpyHeader *h, int64_t have, int64_t want, FfgError *err)
{
    char text[NPY_SHAPE_TEXT];

    return fail(err, FFG_ERR_VALUE, "'%s': the data is %lld bytes, but shape %s of dtype '%s' needs exactly %lld (%s)",
                path, (long long)have, format_shape(h->shape, h->ndim, text, sizeof text), h->descr, (long long)want,
                have < want ? "the file is truncated" : "there are trailing bytes");
}

/* Grows *buf towards want bytes, doubling from 1 MiB so that the copying stays linear. */
static int grow(char **buf, size_t *cap, size_t want)
{
    size_t next = (size_t)1 << 20;
    char *bigger;

    if (*cap >= next)
        next = *cap > want / 2 ? want : *cap * 2;
    if (next > want)
        next = want;
    bigger = (char *)realloc(*buf, next);
    if (bigger == NULL)
        return 0;
    *buf = bigger;
    *cap = next;
    return 1;
}

/* Counts the bytes left in f, for the message about trailing bytes. */
static int64_t count_rest(FILE *f)
{
    char scratch[4096];
    int64_t n = 0;
    size_t got;

    while ((got = fread(scratch, 1, sizeof scratch, f)) > 0)
        n += (int64_t)got;
    return n;
}

/*
 * Reads the nbytes of elements that end the file into a new block. The block
 * grows as the data arrives rather than being allocated on the header's word,
 * so that a short file claiming a huge shape is reported as truncated, not as
 * out of memory. An empty array still gets a (1-byte) block.
 */
static int32_t read_data(FILE *f, const char *path, const NpyHeader *h, int64_t nbytes, void **data, FfgError *err)
{
    size_t want = (size_t)nbytes, have = 0, cap = 0, got;
    char *buf = NULL;
    int64_t extra;

    if ((uint64_t)nbytes >= (uint64_t)SIZE_MAX)
        return fail(err, FFG_ERR_NOMEM, "'%s': %lld bytes of data do not fit in this machine's memory",
                    path, (long long)nbytes);
    while (have < want) {
        if (have == cap && !grow(&buf, &cap, want)) {
            free(buf);
            return fail(err, FFG_ERR_NOMEM, "'%s': cannot allocate %lld bytes for the data", path, (long long)nbytes);
        }
        got = fread(buf + have, 1, cap - have, f);
        if (got == 0)
            break;
        have += got;
    }
    extra = have == want ? count_rest(f) : 0;
    if (ferror(f) || have < want || extra > 0) {
        free(buf);
        if (ferror(f))
            return short_read(f, path, "data", err);
        return size_mismatch(path, h, (int64_t)have + extra, nbytes, err);
    }
    if (buf == NULL && (buf = (char *)malloc(1)) == NULL)
        return fail(err, FFG_ERR_NOMEM, "'%s': cannot allocate the block of an empty array", path);
    *data = buf;
    return FFG_OK;
}

static int32_t read_npy(FILE *f, const char *path, FfgNpyArray *out, FfgError *err)
{
    NpyHeader h;
    FfgDtype dtype;
    int64_t nbytes = 0;
    void *data = NULL;
    int32_t rc = read_header(f, path, &h, err);

    if (rc == FFG_OK)
        rc = check_header(path, &h, &dtype, &nbytes, err);
    if (rc == FFG_OK)
        rc = read_data(f, path, &h, nbytes, &data, err);
    if (rc != FFG_OK)
        return rc;
    memcpy(out->shape, h.shape, sizeof(int64_t) * (size_t)h.ndim);
    out->data = data;
    out->tensor.data = data;
    out->tensor.device.device_type = FFG_DEVICE_CPU;
    out->tensor.device.device_id = 0;
    out->tensor.ndim = h.ndim;
    out->tensor.dtype = dtype;
    out->tensor.shape = out->shape;
    out->tensor.strides = NULL;
    out->tensor.byte_offset = 0;
    return FFG_OK;
}

int32_t ffg_npy_read(const char *path, FfgNpyArray *out, FfgError *err)
{
    FILE *f;
    int32_t rc;

    clear_error(err);
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (path == NULL || out == NULL)
        return fail(err, FFG_ERR_VALUE, "ffg_npy_read: path and out must not be NULL");
    f = fopen(path, "rb");
    if (f == NULL)
        return fail(err, FFG_ERR_VALUE, "cannot open '%s': %s", path, strerror(errno));
    rc = read_npy(f, path, out, err);
    fclose(f);
    return rc;
}

void ffg_npy_free(FfgNpyArray *a)
{
    if (a == NULL)
        return;
    free(a->data);
    a->data = NULL;
    a->tensor.data = NULL;
}

/* ------------------------------------------------------------------ writing */

static int32_t check_tensor(const char *path, const FfgTensor *t, int64_t *nbytes, FfgError *err)
{
    const char *descr = ffg_npy_descr(t->dtype);
    int32_t rc;

    if (t->device.device_type != FFG_DEVICE_CPU)
        return fail(err, FFG_ERR_TYPE, "'%s': the tensor is on device type %d; only CPU tensors (%d) can be written",
                    path, (int)t->device.device_type, FFG_DEVICE_CPU);
    if (descr == NULL)
        return fail(err, FFG_ERR_TYPE, "'%s': dtype (code %u, bits %u, lanes %u) has no .npy form in the ffigraph ABI",
                    path, (unsigned)t->dtype.code, (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
    rc = check_shape(path, t->shape, (int)t->ndim, descr, t->dtype.bits / 8, nbytes, err);
    if (rc != FFG_OK)
        return rc;
    if (*nbytes > 0 && t->data == NULL)
        return fail(err, FFG_ERR_VALUE, "'%s': the tensor's data is NULL but it holds %lld bytes",
                    path, (long long)*nbytes);
    return FFG_OK;
}

/*
 * The header numpy writes, in version 1.0 (the 32 dimensions the ABI allows
 * never need more than its 65535 bytes): the dict, then spaces and '\n' so
 * that magic .. newline is a multiple of NPY_ALIGN bytes. Returns its length.
 */
static size_t format_header(const char *descr, const int64_t *shape, int ndim, char *buf)
{
    char text[NPY_SHAPE_TEXT];
    size_t dict, total, header_len;

    dict = (size_t)snprintf(buf + NPY_PREFIX_V1, NPY_HEADER_TEXT - NPY_PREFIX_V1,
                            "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                            descr, format_shape(shape, ndim, text, sizeof text));
    total = (NPY_PREFIX_V1 + dict + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    memset(buf + NPY_PREFIX_V1 + dict, ' ', total - 1 - NPY_PREFIX_V1 - dict);
    buf[total - 1] = '\n';
    header_len = total - NPY_PREFIX_V1;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[NPY_MAGIC_LEN] = 1;
    buf[NPY_MAGIC_LEN + 1] = 0;
    buf[NPY_MAGIC_LEN + 2] = (char)(header_len & 0xff);
    buf[NPY_MAGIC_LEN + 3] = (char)(header_len >> 8);
    return total;
}

/* n elements from row on, stride elements apart: one fwrite when they touch, else one each. */
static int write_row(FILE *f, const char *row, int64_t n, int64_t stride, size_t itemsize)
{
    int64_t j;

    if (stride == 1)
        return fwrite(row, itemsize, (size_t)n, f) == (size_t)n;
    for (j = 0; j < n; j++)
        if (fwrite(row + j * stride * (int64_t)itemsize, itemsize, 1, f) != 1)
            return 0;
    return 1;
}

/* Writes the (non-empty) tensor's elements in C order, a row of the last axis at a time. */
static int write_elements(FILE *f, const FfgTensor *t)
{
    int64_t contiguous[FFG_MAX_NDIM], index[FFG_MAX_NDIM] = {0};
    const int64_t *strides = t->strides;
    const char *base = (const char *)t->data + t->byte_offset;
    size_t itemsize = t->dtype.bits / 8;
    int last = t->ndim - 1, d;

    if (t->ndim == 0)
        return fwrite(base, itemsize, 1, f) == 1;
    if (strides == NULL) {
        contiguous[last] = 1;
        for (d = last - 1; d >= 0; d--)
            contiguous[d] = contiguous[d + 1] * t->shape[d + 1];
        strides = contiguous;
    }
    for (;;) {
        int64_t offset = 0;
        for (d = 0; d < last; d++)
            offset += index[d] * strides[d];
        if (!write_row(f, base + offset * (int64_t)itemsize, t->shape[last], strides[last], itemsize))
            return 0;
        /* Step the index over all axes but the last, like an odometer. */
        for (d = last - 1; d >= 0 && ++index[d] == t->shape[d]; d--)
            index[d] = 0;
        if (d < 0)
            return 1;
    }
}

int32_t ffg_npy_write(const char *path, const FfgTensor *t, FfgError *err)
{
    char header[NPY_HEADER_TEXT];
    size_t header_len;
    int64_t nbytes;
    int32_t rc;
    FILE *f;
    int ok;

    clear_error(err);
    if (path == NULL || t == NULL)
        return fail(err, FFG_ERR_VALUE, "ffg_npy_write: path and tensor must not be NULL");
    rc = check_tensor(path, t, &nbytes, err);
    if (rc != FFG_OK)
        return rc;
    header_len = format_header(ffg_npy_descr(t->dtype), t->shape, (int)t->ndim, header);
    f = fopen(path, "wb");
    if (f == NULL)
        return fail(err, FFG_ERR_VALUE, "cannot open '%s' for writing: %s", path, strerror(errno));
    ok = fwrite(header, 1, header_len, f) == header_len && (nbytes == 0 || write_elements(f, t));
    /* fclose flushes stdio's buffer: a full disk may only show here. */
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        return fail(err, FFG_ERR_VALUE, "cannot write '%s': %s", path, strerror(errno));
    return FFG_OK;
}
