/*
 * Arrow columns written directly by the row kernel (_kernel.c): the "columns" the ColumnBuilder type fills.
 *
 * Layout: the Arrow columnar format (arrow.apache.org/docs/format/Columnar.html). A fixed-width column is its
 * values back to back (int64 / int32 little-endian, as this machine writes them); a bool column is a bitmap;
 * a string or binary column is int32 offsets (n + 1 of them, the first 0) and the concatenated bytes; a column
 * with nulls has a validity bitmap (bit i of byte i / 8, least significant first; 1 = valid).
 *
 * While rows accumulate, validity and bools are one byte per row (so a prefix of rows can be handed over and the
 * rest moved to the front without shifting bits); `ac_take` packs them into bitmaps. Nothing here creates a
 * Python object per value: a batch leaves as a few bytes objects per column.
 */
#ifndef SPARK_LOGSOURCE_ARROW_H
#define SPARK_LOGSOURCE_ARROW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../_native/_arrow_out.h"
#include "../_native/_buf.h"

/* Output columns, in the order ColumnBuilder.take returns them. */
enum {
    A_OFFSET, A_LSN, A_REPLICA_ID, A_TSN, A_IS_COMMIT, A_TIMESTAMP, A_TYPE, A_GROUP_ID, A_SPACE_ID, A_INDEX_ID,
    A_KEY, A_TUPLE, A_OPS, A_EXTRA, A_KEY_META, A_TUPLE_META, A_OPS_META, A_EXTRA_META, A_CORRUPT, A_COUNT
};
enum { AK_I64, AK_I32, AK_BOOL, AK_VAR };

static const uint8_t A_KIND[A_COUNT] = {
    AK_I64, AK_I64, AK_I32, AK_I64, AK_BOOL, AK_I64, AK_VAR, AK_I32, AK_I32, AK_I32,
    AK_VAR, AK_VAR, AK_VAR, AK_VAR, AK_VAR, AK_VAR, AK_VAR, AK_VAR, AK_VAR,
};

/* Largest offset of an Arrow string/binary column (int32 offsets). */
#define AC_VAR_MAX ((size_t)INT32_MAX)

typedef struct {
    ls_buf data;  /* fixed-width values, one byte per bool, or the bytes of a string/binary column */
    ls_buf offs;  /* string/binary: int32 end offset per row, after a leading 0 */
    ls_buf valid; /* one byte per row: 1 = valid */
} acol;

typedef struct {
    size_t rows;
    size_t cap_rows; /* every column has room for this many rows of fixed-size parts (values, validity, offsets) */
    uint64_t bytes; /* variable-width bytes counted by the batch byte cap (values, metadata, corrupt messages) */
    acol c[A_COUNT];
} acols;

/* Does column `col` count towards the batch byte cap (spark_logsource.arrow.batching: values and messages)? */
static inline int ac_counted(int col) { return col >= A_KEY; }

static inline int ac_width(int col) { return A_KIND[col] == AK_I64 ? 8 : A_KIND[col] == AK_I32 ? 4 : 1; }

static int ac_init(acols *s)
{
    memset(s, 0, sizeof *s);
    int32_t zero = 0;
    for (int c = 0; c < A_COUNT; c++)
        if (A_KIND[c] == AK_VAR && ls_buf_put(&s->c[c].offs, &zero, sizeof zero))
            return -1;
    return 0;
}

static void ac_free(acols *s)
{
    for (int c = 0; c < A_COUNT; c++) {
        ls_buf_free(&s->c[c].data);
        ls_buf_free(&s->c[c].offs);
        ls_buf_free(&s->c[c].valid);
    }
}

static int ac_nomem(void)
{
    PyErr_NoMemory();
    return -1;
}

/* Room for cap_rows rows (at least `rows` + 1) in the fixed-size parts of every column. */
static int ac_grow_rows(acols *s)
{
    size_t want = s->cap_rows < 1024 ? 1024 : 2 * s->cap_rows;
    if (want <= s->rows)
        want = s->rows + 1024;
    for (int c = 0; c < A_COUNT; c++) {
        acol *a = &s->c[c];
        size_t w = (size_t)ac_width(c);
        if (ls_buf_reserve(&a->valid, want - a->valid.len))
            return ac_nomem();
        if (A_KIND[c] == AK_VAR) {
            if (ls_buf_reserve(&a->offs, (want + 1) * sizeof(int32_t) - a->offs.len))
                return ac_nomem();
        } else if (ls_buf_reserve(&a->data, want * w - a->data.len)) {
            return ac_nomem();
        }
    }
    s->cap_rows = want;
    return 0;
}

/* Make sure every column can take one more row: called once before each row, so that the appends below need no
 * check of their own (each column takes exactly one value per row; a row that fails is cut back by ac_truncate). */
static inline int ac_row_room(acols *s) { return s->rows < s->cap_rows ? 0 : ac_grow_rows(s); }

/* Append a fixed-width value (int64 / int32 / bool) or, valid == 0, a null. */
static inline int ac_i64(acols *s, int col, int64_t v, int valid)
{
    acol *c = &s->c[col];
    memcpy(c->data.data + c->data.len, &v, 8);
    c->data.len += 8;
    c->valid.data[c->valid.len++] = (uint8_t)valid;
    return 0;
}

static inline int ac_i32(acols *s, int col, int32_t v, int valid)
{
    acol *c = &s->c[col];
    memcpy(c->data.data + c->data.len, &v, 4);
    c->data.len += 4;
    c->valid.data[c->valid.len++] = (uint8_t)valid;
    return 0;
}

static inline int ac_bool(acols *s, int col, int v, int valid)
{
    acol *c = &s->c[col];
    c->data.data[c->data.len++] = (uint8_t)(v != 0);
    c->valid.data[c->valid.len++] = (uint8_t)valid;
    return 0;
}

/* Append bytes p[0..n) to a string/binary column (valid == 0: a null, n must be 0). */
static inline int ac_var(acols *s, int col, const void *p, size_t n, int valid)
{
    acol *c = &s->c[col];
    if (n) {
        if (n > AC_VAR_MAX - c->data.len) {
            PyErr_SetString(PyExc_OverflowError, "a batch column would exceed the 2 GiB of an Arrow binary array");
            return -1;
        }
        if (ls_buf_put(&c->data, p, n))
            return ac_nomem();
    }
    int32_t end = (int32_t)c->data.len;
    memcpy(c->offs.data + c->offs.len, &end, sizeof end);
    c->offs.len += sizeof end;
    c->valid.data[c->valid.len++] = (uint8_t)valid;
    if (ac_counted(col))
        s->bytes += n;
    return 0;
}

/* The bytes from `start` to the end of column `col`'s data (written there directly) become its next value. */
static inline int ac_var_commit(acols *s, int col, size_t start)
{
    acol *c = &s->c[col];
    if (c->data.len > AC_VAR_MAX) {
        c->data.len = start;
        PyErr_SetString(PyExc_OverflowError, "a batch column would exceed the 2 GiB of an Arrow binary array");
        return -1;
    }
    int32_t end = (int32_t)c->data.len;
    memcpy(c->offs.data + c->offs.len, &end, sizeof end);
    c->offs.len += sizeof end;
    c->valid.data[c->valid.len++] = 1;
    if (ac_counted(col))
        s->bytes += c->data.len - start;
    return 0;
}

static inline const int32_t *ac_offs(const acols *s, int col) { return (const int32_t *)s->c[col].offs.data; }

/* Drop every row from `rows` on (a block whose rows failed: the columns go back to where they were). */
static void ac_truncate(acols *s, size_t rows, uint64_t bytes)
{
    for (int c = 0; c < A_COUNT; c++) {
        acol *a = &s->c[c];
        if (a->valid.len > rows)
            a->valid.len = rows;
        if (A_KIND[c] == AK_VAR) {
            if (a->offs.len > (rows + 1) * sizeof(int32_t))
                a->offs.len = (rows + 1) * sizeof(int32_t);
            a->data.len = (size_t)ac_offs(s, c)[a->offs.len / sizeof(int32_t) - 1];
        } else if (a->data.len > rows * (size_t)ac_width(c)) {
            a->data.len = rows * (size_t)ac_width(c);
        }
    }
    s->rows = rows;
    s->bytes = bytes;
}

/* How many leading rows form the next batch: at most max_rows and max_bytes counted bytes, at least one row
 * (spark_logsource.arrow.batching.cut_batches, applied row by row). */
static size_t ac_batch_rows(const acols *s, size_t max_rows, uint64_t max_bytes)
{
    if (s->rows <= max_rows && s->bytes <= max_bytes)
        return s->rows;
    size_t n = 0;
    uint64_t taken = 0;
    while (n < s->rows) {
        uint64_t row = 0;
        for (int c = A_KEY; c < A_COUNT; c++) {
            if (s->c[c].valid.len == 0)
                continue; /* a column this format does not use */
            const int32_t *o = ac_offs(s, c);
            row += (uint64_t)(o[n + 1] - o[n]);
        }
        if (n > 0 && (n >= max_rows || taken + row > max_bytes))
            break;
        taken += row;
        n++;
    }
    return n;
}

/* A buffer holding the bitmap of bytes v[0..n) (nonzero = set). */
static PyObject *ac_bitmap(PyObject *alloc, const uint8_t *v, size_t n)
{
    uint8_t *bits;
    PyObject *out = ls_arrow_out(alloc, (n + 7) / 8, &bits);
    if (out == NULL)
        return NULL;
    size_t full = n / 8;
    for (size_t i = 0; i < full; i++) {
        const uint8_t *b = v + 8 * i;
        bits[i] = (uint8_t)((b[0] != 0) | (b[1] != 0) << 1 | (b[2] != 0) << 2 | (b[3] != 0) << 3 |
                            (b[4] != 0) << 4 | (b[5] != 0) << 5 | (b[6] != 0) << 6 | (b[7] != 0) << 7);
    }
    if (n % 8) {
        uint8_t last = 0;
        for (size_t j = 0; j < n % 8; j++)
            last |= (uint8_t)((v[8 * full + j] != 0) << j);
        bits[full] = last;
    }
    return out;
}

/* A buffer holding a copy of src[0..n). */
static PyObject *ac_copy(PyObject *alloc, const void *src, size_t n)
{
    uint8_t *data;
    PyObject *out = ls_arrow_out(alloc, n, &data);
    if (out != NULL && n)
        memcpy(data, src, n);
    return out;
}

/* (null_count, validity bitmap or None, data, offsets or None) of the first n rows of column `col`. */
static PyObject *ac_column(const acols *s, int col, size_t n, PyObject *alloc)
{
    const acol *a = &s->c[col];
    size_t nulls = 0;
    for (size_t i = 0; i < n; i++)
        nulls += a->valid.data[i] == 0;
    PyObject *validity = nulls ? ac_bitmap(alloc, a->valid.data, n) : Py_NewRef(Py_None);
    PyObject *data = NULL, *offsets = NULL;
    if (validity == NULL)
        return NULL;
    switch (A_KIND[col]) {
    case AK_BOOL:
        data = ac_bitmap(alloc, a->data.data, n);
        offsets = Py_NewRef(Py_None);
        break;
    case AK_VAR:
        data = ac_copy(alloc, a->data.data, (size_t)ac_offs(s, col)[n]);
        offsets = data ? ac_copy(alloc, a->offs.data, (n + 1) * sizeof(int32_t)) : NULL;
        break;
    default:
        data = ac_copy(alloc, a->data.data, n * (size_t)ac_width(col));
        offsets = Py_NewRef(Py_None);
        break;
    }
    if (data == NULL || offsets == NULL) {
        Py_DECREF(validity);
        Py_XDECREF(data);
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(nNNN)", (Py_ssize_t)nulls, validity, data, offsets);
}

/* Remove the first n rows, moving the others to the front. */
static void ac_drop_front(acols *s, size_t n)
{
    size_t rest = s->rows - n;
    uint64_t dropped = 0;
    for (int c = 0; c < A_COUNT; c++) {
        acol *a = &s->c[c];
        if (a->valid.len == 0)
            continue; /* a column this format does not use */
        if (rest) /* (never memmove from a buffer that was not allocated: a column of empty values has none) */
            memmove(a->valid.data, a->valid.data + n, rest);
        a->valid.len = rest;
        if (A_KIND[c] == AK_VAR) {
            int32_t *o = (int32_t *)a->offs.data;
            int32_t base = o[n];
            if (ac_counted(c))
                dropped += (uint64_t)base;
            size_t keep = (size_t)(o[s->rows] - base);
            if (keep)
                memmove(a->data.data, a->data.data + base, keep);
            a->data.len = keep;
            for (size_t i = 0; i <= rest; i++)
                o[i] = o[n + i] - base;
            a->offs.len = (rest + 1) * sizeof(int32_t);
        } else {
            size_t w = (size_t)ac_width(c);
            if (rest)
                memmove(a->data.data, a->data.data + n * w, rest * w);
            a->data.len = rest * w;
        }
    }
    s->bytes -= dropped;
    s->rows = rest;
}

#endif
