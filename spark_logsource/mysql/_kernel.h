/*
 * What the parts of spark_logsource.mysql._kernel share (private to it; one concern per file):
 *
 *   _kernel.c         the module: its functions table, its exception classes, the errors every part raises
 *   _kernel_values.c  one value of a row image -> Variant bytes or JSON text (the layouts of values.py)
 *   _kernel_plans.c   compile_plan: the compiled description of one row-image shape
 *   _kernel_images.c  encode_rows: the row images of one rows event -> Arrow column parts (Variant / JSON)
 *   _kernel_typed.c   compile_typed / typed_rows / json_variant(s): view=table's typed columns (_typed.h)
 *   _kernel_runs.c    rows_head, encode_rows_run: a run of rows events in one call; crc32
 *   _kernel_text.c    text_columns / text_feed / text_take: the snapshot's SELECT rows -> Arrow column parts
 *
 * The functions one part gives another are named mk_*; everything else stays static in its file. The hot loop of
 * a value (its decoders and emitters) is in one file, so the compiler inlines across it as before the split.
 */
#ifndef SPARK_LOGSOURCE_MYSQL_KERNEL_H
#define SPARK_LOGSOURCE_MYSQL_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_native/_buf.h"
#include "../_native/_encode.h"

/* Value kinds and charset kinds: the K_* / CS_* constants of encode/images.py. */
enum mk_kind {
    K_NULL, K_INT, K_FLOAT, K_DOUBLE, K_DECIMAL, K_DATE, K_YEAR, K_DATETIME2, K_TIMESTAMP2, K_TIME2,
    K_TIMESTAMP_OLD, K_DATETIME_OLD, K_TIME_OLD, K_TEXT, K_ENUM, K_SET, K_BIT, K_NKINDS
};
enum mk_charset { CS_UTF8, CS_BINARY, CS_TABLE, CS_CODEC };
enum { OP_INSERT, OP_UPDATE, OP_DELETE };

#include "_decimal.h" /* MAX_DECIMAL_DIGITS */

/* One present column of an image. */
typedef struct {
    int kind;
    int a, b, c;          /* kind arguments (see encode/images.py _column_spec) */
    int row_start_trunc;  /* truncation reported at the row's start (Python's struct/indexing error) */
    const char *what;     /* name in truncation messages (owned by the plan's blob) */
    size_t nnames;        /* ENUM / SET names: offsets into the blob */
    size_t names_at;      /* index of the first name in plan->name_off / name_len */
    const char *codec;    /* CS_CODEC: Python codec name (blob) */
    int32_t *table;       /* CS_TABLE: code point of each byte, -1 = not decodable (owned) */
    size_t jkey_off, jkey_len; /* JSON member prefix "\"key\":" in the blob */
    size_t size;          /* bytes of a value of a fixed-size kind (mk_fixed_size); 0 for NULL and TEXT */
} mk_col;

typedef struct {
    Py_ssize_t n;          /* present columns */
    mk_col *cols;
    uint32_t *order;       /* sorted (variant field) position -> column index */
    size_t null_bytes;
    int keys_nonascii;     /* some JSON member prefix holds non-ASCII bytes */
    PyObject *metadata;    /* variant metadata of the key set (bytes) */
    size_t *name_off;
    uint32_t *name_len;
    ls_buf blob;           /* names, JSON key prefixes, what strings, codec names */
} mk_plan;

/* Decoding state of one encode_rows call. */
typedef struct {
    const uint8_t *data;
    size_t end;
    long long data_base;
    int in_block;
    PyObject *label;
    Py_ssize_t nrows;      /* complete rows so far (error messages) */
    int json;
    int nonascii;          /* JSON text of the current row holds non-ASCII bytes */
    ls_buf vals;           /* variant: the values of the current row in column order */
    ls_buf spans;          /* variant: (start, len) size_t pairs into vals */
    ls_buf tmp;            /* text conversions */
} mk_ctx;

enum { MK_OK = 0, MK_ERR = -1 };

/* One side's output as Arrow column parts (encode/images.py ImageColumn): the int32 end offset of each image and the
 * images back to back (Variant values or UTF-8 JSON text); for Variant also each image's metadata, the same way.
 * No Python object per row: the event's images leave as four bytes objects. */
typedef struct {
    ls_buf ends, data, meta_ends, meta;
} side;

/* view=table's conversions of one image shape (_kernel_typed.c), and one side of a rows event as typed columns,
 * one per present column (struct tk_col: _typed.h). */
typedef struct tk_plan tk_plan;
typedef struct {
    Py_ssize_t m;
    struct tk_col *cols;
} tk_side;

/* The unsigned little-endian integer of n bytes (0..8) at p. The common widths load as one word: the kernels assume
 * a little-endian host, as _buf.h's writers do. */
static inline uint64_t rd_le(const uint8_t *p, int n)
{
    uint16_t u16;
    uint32_t u32;
    uint64_t v = 0;
    switch (n) {
    case 1:
        return p[0];
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return u32;
    case 8:
        memcpy(&v, p, 8);
        return v;
    default:
        for (int i = n - 1; i >= 0; i--)
            v = (v << 8) | p[i];
        return v;
    }
}

static inline uint64_t rd_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* ---- _kernel.c: errors (the class, offset and message rows.parse_rows_event gives for the same bytes) ------------ */

extern PyObject *mk_CorruptDataError;
extern PyObject *mk_TruncatedDataError;
int mk_raise_error(PyObject *cls, mk_ctx *x, size_t p, PyObject *msg);
int mk_trunc_row(mk_ctx *x, size_t row_start);
int mk_trunc_value(mk_ctx *x, size_t pos, const char *what);
int mk_nomem(void);

/* ---- _kernel_values.c ---- */

int mk_emit_value(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, size_t *pos, size_t row_start);
size_t mk_fixed_size(const mk_col *col);

/* A NULL value: Variant null or JSON null. */
static inline int mk_emit_null(mk_ctx *x, ls_buf *b)
{
    if (x->json)
        return ls_buf_put(b, "null", 4) ? mk_nomem() : MK_OK;
    return ls_buf_byte(b, VH_NULL) ? mk_nomem() : MK_OK;
}

/* ---- _kernel_plans.c ---- */

PyObject *mk_compile_plan(PyObject *self, PyObject *args);
mk_plan *mk_get_plan(PyObject *capsule);
int mk_long_item(PyObject *tuple, Py_ssize_t i, int lo, int hi, int *out);

/* ---- _kernel_images.c ---- */

PyObject *mk_encode_rows(PyObject *self, PyObject *args);
int mk_encode_event_rows(mk_ctx *x, side *first, side *second, const mk_plan *plan, const mk_plan *plan_after,
                         int op, size_t pos);
void mk_side_clear(side *s);
PyObject *mk_sides_result(const side *first, const side *second, int op, int json);
PyObject *mk_buf_bytes(const ls_buf *b);
void mk_ctx_init(mk_ctx *x, const Py_buffer *view, long long data_base, int in_block, PyObject *label);
void mk_ctx_clear(mk_ctx *x);

/* ---- _kernel_typed.c ---- */

PyObject *mk_compile_typed(PyObject *self, PyObject *args);
PyObject *mk_typed_rows(PyObject *self, PyObject *args);
PyObject *mk_json_variant(PyObject *self, PyObject *args);
PyObject *mk_json_variants(PyObject *self, PyObject *texts);
tk_plan *mk_get_typed(PyObject *capsule);
int mk_typed_fit(const tk_plan *conv, const tk_plan *conv_after, const mk_plan *plan, const mk_plan *plan_after);
int mk_tk_side_init(tk_side *s, Py_ssize_t m);
void mk_tk_side_clear(tk_side *s);
int mk_tk_mark(const tk_side *first, const tk_side *second, ls_buf *marks);
void mk_tk_seek(tk_side *first, tk_side *second, const ls_buf *marks);
int mk_typed_event_rows(mk_ctx *x, tk_side *first, tk_side *second, const mk_plan *plan, const mk_plan *plan_after,
                        const tk_plan *conv, const tk_plan *conv_after, int op, size_t pos);
PyObject *mk_tk_sides_result(const tk_side *first, const tk_side *second, int op, const tk_plan *conv,
                             const tk_plan *conv_after);

/* ---- _kernel_runs.c ---- */

PyObject *mk_rows_head(PyObject *self, PyObject *args);
PyObject *mk_encode_rows_run(PyObject *self, PyObject *args);
PyObject *mk_crc32(PyObject *self, PyObject *args);
PyObject *mk_crc32_folds(PyObject *self, PyObject *unused);
PyObject *mk_set_crc32_folding(PyObject *self, PyObject *on);
void mk_crc32_init(void);

/* ---- _kernel_text.c ---- */

PyObject *mk_text_columns(PyObject *self, PyObject *args);
PyObject *mk_text_feed(PyObject *self, PyObject *args);
PyObject *mk_text_declined(PyObject *self, PyObject *capsule);
PyObject *mk_text_take(PyObject *self, PyObject *capsule);

#endif
