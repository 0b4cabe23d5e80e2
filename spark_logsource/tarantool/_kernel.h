/*
 * What the parts of spark_logsource.tarantool._kernel share (private to it; one concern per file):
 *
 *   _kernel.c          the module: its state (name caches, exception classes), the errors every part raises, names
 *   _kernel_values.c   one stored value -> its column entry (the transcoders, or the Python path for that value)
 *   _kernel_maps.c     a row's header and body maps, and its `extra` members
 *   _kernel_rows.c     one row -> its columns; decode_payload (the rows of one block as lists)
 *   _kernel_builder.c  ColumnBuilder: the rows of many blocks as Arrow columns
 *
 * The functions and state one part gives another are named tt_*; everything else stays static in its file.
 */
#ifndef SPARK_LOGSOURCE_TARANTOOL_KERNEL_H
#define SPARK_LOGSOURCE_TARANTOOL_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

/* These headers define static helpers (the transcoders, the Arrow columns); each part uses some of them, and the
 * compiler drops the rest of each copy: not an unused function of this kernel's own. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../_native/_buf.h"
#include "_msgpack.h"
#include "_text.h"
#include "_variant.h"
#include "_jsonw.h"
#include "_arrow.h"
#pragma GCC diagnostic pop

/* ---- row layout constants (tarantool src/box/iproto_constants.h) ---- */
enum {
    H_TYPE = 0x00, H_SYNC = 0x01, H_REPLICA_ID = 0x02, H_LSN = 0x03, H_TIMESTAMP = 0x04, H_SCHEMA_VERSION = 0x05,
    H_SERVER_VERSION = 0x06, H_GROUP_ID = 0x07, H_TSN = 0x08, H_FLAGS = 0x09, H_STREAM_ID = 0x0a,
};
enum { B_SPACE_ID = 0x10, B_INDEX_ID = 0x11, B_KEY = 0x20, B_TUPLE = 0x21, B_OPS = 0x28 };
enum { TYPE_UPDATE = 4, TYPE_NOP = 12 };
#define INT31 ((uint64_t)1 << 31)
#define INT63 ((uint64_t)1 << 63)

enum { FMT_VARIANT, FMT_JSON, FMT_MSGPACK };

/* Output columns; the value columns take two slots (value, metadata) in variant format. */
enum { C_LSN, C_REPLICA_ID, C_TSN, C_IS_COMMIT, C_TIMESTAMP, C_TYPE, C_GROUP_ID, C_SPACE_ID, C_INDEX_ID, C_NSCALAR };
enum { V_KEY, V_TUPLE, V_OPS, V_EXTRA, V_COUNT };
#define MAX_COLS (C_NSCALAR + 2 * V_COUNT)


/* One entry of a header or body map: key code and the stored bytes of its value. */
typedef struct {
    uint64_t code;
    const uint8_t *val;
    size_t len;
    int flags;      /* MPF_* of the value */
    uint32_t index; /* position in the map (for duplicate resolution) */
} kv_entry;

/* One member of `extra`: its name (owned reference) and the stored bytes of its value. */
typedef struct {
    PyObject *name;
    const uint8_t *val;
    size_t len;
    int flags;
} extra_entry;

typedef struct {
    const uint8_t *base;
    const uint8_t *end;
    int fmt;
    PyObject *path;
    PyObject *block_offset;
    Py_ssize_t row;     /* index of the row being decoded */
    size_t row_pos;     /* payload offset of its header */
    int ncols;
    ls_buf cols[MAX_COLS]; /* PyObject* per row, per column (owned) */
    ls_buf header, body;   /* kv_entry arrays of the current row */
    ls_buf extra;          /* extra_entry array of the current row */
    ls_buf synth;          /* msgpack bytes of the current row's extra map */
    tc_ctx tc;
    PyObject *last_ts;     /* cache: the previous row's timestamp object */
    int64_t last_ts_value;
    PyObject *last_meta;   /* cache: the previous non-empty variant metadata */
    PyObject *extra_index; /* dict name -> index into `extra`, for rows with many extra members */
    acols *out;            /* Arrow columns to append to (ColumnBuilder), or NULL: PyObject lists in `cols` */
    int64_t offset_value;  /* block_offset as an integer (the `offset` column) */
} decoder;

/* ---- _kernel.c: module-level state (created once at import) ---- */
extern PyObject *tt_CorruptDataError;   /* spark_logsource.errors.CorruptDataError */
extern PyObject *tt_names_module;       /* spark_logsource.tarantool.decode.names */
extern const char *tt_type_text_cache[256]; /* UTF-8 of the type names (owned by the name cache) */
extern Py_ssize_t tt_type_len_cache[256];
extern PyObject *tt_empty_metadata;     /* b"\x01\x00\x00" */
extern PyObject *tt_empty_bytes;        /* b"" */
extern PyObject *tt_body_prefix;        /* "body_" */
extern PyObject *tt_catchable;          /* exceptions rows.py turns into CorruptDataError */

/* ---- _kernel.c: errors and names ---- */
int tt_fail(decoder *d, const char *format, ...);
int tt_fail_mp(decoder *d, int rc, const char *what);
int tt_convert_py_error(decoder *d);
PyObject *tt_type_name(uint64_t code);
PyObject *tt_header_key_name(uint64_t code);
PyObject *tt_body_key_name(uint64_t rtype, uint64_t code);

/* ---- _kernel_values.c ---- */
PyObject *tt_py_decode(decoder *d, const uint8_t *val, size_t len);
int tt_put_value(decoder *d, int v, const uint8_t *val, size_t len, int flags);

/* Append one owned object to a PyObject* column (a NULL obj: the error is already set). */
static inline int tt_push(decoder *d, int col, PyObject *obj)
{
    if (obj == NULL)
        return -1;
    if (ls_buf_put(&d->cols[col], &obj, sizeof obj)) {
        Py_DECREF(obj);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* ---- _kernel_maps.c ---- */
int tt_read_map(decoder *d, mp_rd *r, ls_buf *entries, int is_header);
Py_ssize_t tt_extra_find(decoder *d, PyObject *name, size_t limit);
int tt_extra_put(decoder *d, PyObject *name, const uint8_t *val, size_t len, int flags);
int tt_build_extra_msgpack(decoder *d, int *flags);

/* The decoded msgpack item of an entry's value (scalars only are looked at). */
static inline int tt_entry_item(const kv_entry *e, mp_item *it)
{
    mp_rd r = {e->val, e->val + e->len};
    return mp_next(&r, it);
}

/* The current row's `extra` members dropped (their names released). */
static inline void tt_extra_clear(decoder *d)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    for (size_t i = 0; i < n; i++)
        Py_XDECREF(x[i].name);
    d->extra.len = 0;
    Py_CLEAR(d->extra_index);
}

/* ---- _kernel_rows.c ---- */
int tt_decode_row(decoder *d, mp_rd *r);
void tt_decoder_free(decoder *d);
PyObject *tt_decode_payload(PyObject *self, PyObject *args);
extern const char tt_decode_payload_doc[];

/* ---- _kernel_builder.c ---- */
extern PyTypeObject tt_ColumnBuilderType;

#endif
