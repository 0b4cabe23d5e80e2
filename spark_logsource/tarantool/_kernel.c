/*
 * spark_logsource.tarantool._kernel: the compiled twin of spark_logsource.tarantool.rows.decode_payload_py.
 *
 *     decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list]
 *     ColumnBuilder(tuple_format): add_payload(payload, path, block_offset), add_corrupt(block_offset, message),
 *                                  rows, bytes, take(max_rows, max_bytes, alloc) -> Arrow buffers of a batch
 *
 * `payload` is one Tarantool xlog/snap block (already decompressed): rows back to back, each a msgpack
 * header map and, unless it is a NOP without one, a body map (tarantool src/box/xrow.c xrow_header_decode;
 * docs/formats/tarantool-xlog.md "Rows"). The row semantics, the output columns and the error contract are those of
 * rows.py's module docstring, which this file follows rule by rule; the reference is the spec, and the tests
 * (tests/tarantool/test_kernel.py) compare both implementations list for list on real files and fuzzed bytes.
 * ColumnBuilder is the twin of columns.PyColumnBuilder: the same rows, written as Arrow columns (_arrow.h) with no
 * Python object per value; a block whose rows fail adds none (the columns are cut back to where they were).
 *
 * Layers: _msgpack.h (bounds-checked reader), _variant.h / _jsonw.h (one msgpack value -> Variant / JSON),
 * _arrow.h (Arrow buffers), this file (rows -> columns, errors, the Python module). A value the C transcoders do not render themselves
 * (Tarantool decimal/datetime/interval/error ext, unknown ext, invalid UTF-8, map or array as a map key, very
 * deep nesting) is decoded and encoded by the Python reference for that one value, so the output is the same
 * by construction. Only the CPython C API is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "../_native/_buf.h"
#include "_msgpack.h"
#include "_text.h"
#include "_variant.h"
#include "_jsonw.h"
#include "_arrow.h"

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

static const char *const SCALAR_NAMES[C_NSCALAR] = {
    "lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id",
};
static const char *const VALUE_NAMES[V_COUNT] = {"key", "tuple", "ops", "extra"};

/* ---- module-level state (created once at import) ---- */
static PyObject *CorruptDataError;   /* spark_logsource.errors.CorruptDataError */
static PyObject *names_module;       /* spark_logsource.tarantool.names */
static PyObject *type_name_cache[256];
static const char *type_text_cache[256]; /* UTF-8 of type_name_cache (owned by those objects) */
static Py_ssize_t type_len_cache[256];
static PyObject *header_name_cache[256];
static PyObject *empty_metadata;     /* b"\x01\x00\x00" */
static PyObject *empty_bytes;        /* b"" */
static PyObject *body_prefix;        /* "body_" */
static PyObject *catchable;          /* exceptions rows.py turns into CorruptDataError */
static PyObject *py_unpacker;        /* rows._unpacker (lazy: rows imports this module) */
static PyObject *py_encode_variant;  /* spark_logsource.tarantool.rows.variant_of (lazy) */
static PyObject *py_to_json;         /* spark_logsource.jsontext.to_json (lazy) */

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

/* ---- errors ---- */

/* Raise CorruptDataError(path, block_offset, "row N at payload byte P: <reason>"); returns -1. */
static int fail_obj(decoder *d, PyObject *reason)
{
    PyObject *msg = reason ? PyUnicode_FromFormat("row %zd at payload byte %zu: %U", d->row, d->row_pos, reason) : NULL;
    if (msg != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(CorruptDataError, d->path, d->block_offset, msg, NULL);
        if (exc != NULL) {
            PyErr_SetObject(CorruptDataError, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(msg);
    }
    return -1;
}

static int fail(decoder *d, const char *format, ...)
{
    va_list va;
    va_start(va, format);
    PyObject *reason = PyUnicode_FromFormatV(format, va);
    va_end(va);
    int rc = fail_obj(d, reason);
    Py_XDECREF(reason);
    return rc;
}

static int fail_mp(decoder *d, int rc, const char *what)
{
    if (rc == MP_ETRUNC)
        return fail(d, "msgpack value truncated by the payload end (%s)", what);
    return fail(d, "malformed msgpack in the %s", what);
}

/* The pending Python exception, if rows.py would catch it, becomes a CorruptDataError for this row. */
static int convert_py_error(decoder *d)
{
    if (!PyErr_ExceptionMatches(catchable))
        return -1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (text == NULL)
        return -1;
    fail_obj(d, text);
    Py_DECREF(text);
    return -1;
}

/* ---- the Python path for single values ---- */

static int load_python_path(void)
{
    if (py_unpacker != NULL)
        return 0;
    PyObject *rows = PyImport_ImportModule("spark_logsource.tarantool.rows");
    if (rows == NULL)
        return -1;
    PyObject *unpacker = PyObject_GetAttrString(rows, "_unpacker");
    /* rows.variant_of: encode_variant, with strings of invalid UTF-8 turned into binary (the reference's rule) */
    PyObject *encode = unpacker ? PyObject_GetAttrString(rows, "variant_of") : NULL;
    Py_DECREF(rows);
    PyObject *jsontext = encode ? PyImport_ImportModule("spark_logsource.jsontext") : NULL;
    PyObject *to_json = jsontext ? PyObject_GetAttrString(jsontext, "to_json") : NULL;
    Py_XDECREF(jsontext);
    if (to_json == NULL) {
        Py_XDECREF(unpacker);
        Py_XDECREF(encode);
        return -1;
    }
    py_unpacker = unpacker;
    py_encode_variant = encode;
    py_to_json = to_json;
    return 0;
}

/* Decode one stored value with rows.py's unpacker (msgpack-python + mpext). New reference or NULL. */
static PyObject *py_decode(decoder *d, const uint8_t *val, size_t len)
{
    if (load_python_path())
        return NULL;
    PyObject *data = PyBytes_FromStringAndSize((const char *)val, (Py_ssize_t)len);
    if (data == NULL)
        return NULL;
    PyObject *unpacker = PyObject_CallOneArg(py_unpacker, data);
    Py_DECREF(data);
    if (unpacker == NULL)
        return NULL;
    PyObject *value = PyObject_CallMethod(unpacker, "unpack", NULL);
    Py_DECREF(unpacker);
    if (value == NULL)
        convert_py_error(d);
    return value;
}

/* Encode one stored value through the Python reference: *out = str (json) or *out, *meta = bytes (variant). */
static int py_encode(decoder *d, const uint8_t *val, size_t len, PyObject **out, PyObject **meta)
{
    PyObject *value = py_decode(d, val, len);
    if (value == NULL)
        return -1;
    PyObject *res = PyObject_CallOneArg(d->fmt == FMT_VARIANT ? py_encode_variant : py_to_json, value);
    Py_DECREF(value);
    if (res == NULL)
        return convert_py_error(d);
    if (d->fmt == FMT_JSON) {
        *out = res;
        return 0;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "variant_of did not return a (value, metadata) tuple");
        return -1;
    }
    *out = Py_NewRef(PyTuple_GET_ITEM(res, 0));
    *meta = Py_NewRef(PyTuple_GET_ITEM(res, 1));
    Py_DECREF(res);
    return 0;
}

/* ---- columns ---- */

static inline int push(decoder *d, int col, PyObject *obj)
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

static int value_col(decoder *d, int v) { return C_NSCALAR + (d->fmt == FMT_VARIANT ? 2 * v : v); }

/* Arrow columns: one value (p == NULL: absent, a null) and, in variant format, its metadata. */
static int arrow_value(decoder *d, int v, const void *p, size_t n, const void *m, size_t mn)
{
    if (ac_var(d->out, A_KEY + v, p, p ? n : 0, p != NULL))
        return -1;
    /* the metadata child of a variant stays non-null: empty bytes under a null struct slot */
    return d->fmt == FMT_VARIANT ? ac_var(d->out, A_KEY_META + v, m, p ? mn : 0, 1) : 0;
}

/* Arrow columns: a value the Python path rendered (str for JSON, bytes value and metadata for variant). */
static int arrow_py_value(decoder *d, int v, PyObject *out, PyObject *meta)
{
    if (d->fmt == FMT_JSON) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(out, &n);
        return text == NULL ? -1 : arrow_value(d, v, text, (size_t)n, NULL, 0);
    }
    if (!PyBytes_Check(out) || !PyBytes_Check(meta)) {
        PyErr_SetString(PyExc_TypeError, "variant_of did not return bytes");
        return -1;
    }
    return arrow_value(d, v, PyBytes_AS_STRING(out), (size_t)PyBytes_GET_SIZE(out), PyBytes_AS_STRING(meta),
                       (size_t)PyBytes_GET_SIZE(meta));
}

/* Append one value column entry: absent (val == NULL) or the stored bytes val[0..len). */
static int put_value(decoder *d, int v, const uint8_t *val, size_t len, int flags)
{
    int col = value_col(d, v);
    if (d->out != NULL && (val == NULL || d->fmt == FMT_MSGPACK))
        return arrow_value(d, v, val, len, NULL, 0);
    if (val == NULL) {
        if (push(d, col, Py_NewRef(Py_None)))
            return -1;
        return d->fmt == FMT_VARIANT ? push(d, col + 1, Py_NewRef(empty_bytes)) : 0;
    }
    if (d->fmt == FMT_MSGPACK)
        return push(d, col, PyBytes_FromStringAndSize((const char *)val, (Py_ssize_t)len));
    int rc = TC_FALLBACK;
    if (d->out != NULL && !(flags & MPF_PY)) {
        /* Arrow columns: the transcoder appends straight to the column's data (no copy through tc.out). */
        acol *target = &d->out->c[A_KEY + v];
        size_t start = target->data.len;
        ls_buf scratch = d->tc.out;
        d->tc.out = target->data;
        rc = d->fmt == FMT_VARIANT ? var_transcode_append(&d->tc, val, len) : json_transcode_append(&d->tc, val, len);
        target->data = d->tc.out;
        d->tc.out = scratch;
        if (rc == TC_OK) {
            if (ac_var_commit(d->out, A_KEY + v, start))
                return -1;
            return d->fmt == FMT_VARIANT ? ac_var(d->out, A_KEY_META + v, d->tc.meta.data, d->tc.meta.len, 1) : 0;
        }
        target->data.len = start; /* a value the Python path renders, or no memory: nothing of it stays */
    } else if (!(flags & MPF_PY)) {
        rc = d->fmt == FMT_VARIANT ? var_transcode(&d->tc, val, len) : json_transcode(&d->tc, val, len);
    }
    if (rc == TC_NOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc == TC_FALLBACK) {
        PyObject *out = NULL, *meta = NULL;
        if (py_encode(d, val, len, &out, &meta))
            return -1;
        if (d->out != NULL) {
            int res = arrow_py_value(d, v, out, meta);
            Py_DECREF(out);
            Py_XDECREF(meta);
            return res;
        }
        if (push(d, col, out))
            return -1;
        return d->fmt == FMT_VARIANT ? push(d, col + 1, meta) : 0;
    }
    const ls_buf *o = &d->tc.out;
    if (d->out != NULL)
        return arrow_value(d, v, o->data, o->len, d->tc.meta.data, d->tc.meta.len);
    if (d->fmt == FMT_JSON) {
        if (!d->tc.nonascii) {
            PyObject *s = PyUnicode_New((Py_ssize_t)o->len, 127);
            if (s != NULL)
                memcpy(PyUnicode_DATA(s), o->data, o->len);
            return push(d, col, s);
        }
        return push(d, col, PyUnicode_DecodeUTF8((const char *)o->data, (Py_ssize_t)o->len, "strict"));
    }
    if (push(d, col, PyBytes_FromStringAndSize((const char *)o->data, (Py_ssize_t)o->len)))
        return -1;
    const ls_buf *m = &d->tc.meta;
    PyObject *meta;
    if (m->len == 3 && memcmp(m->data, "\x01\x00\x00", 3) == 0) {
        meta = Py_NewRef(empty_metadata);
    } else if (d->last_meta != NULL && (size_t)PyBytes_GET_SIZE(d->last_meta) == m->len &&
               memcmp(PyBytes_AS_STRING(d->last_meta), m->data, m->len) == 0) {
        meta = Py_NewRef(d->last_meta);
    } else {
        meta = PyBytes_FromStringAndSize((const char *)m->data, (Py_ssize_t)m->len);
        if (meta == NULL)
            return -1;
        Py_XSETREF(d->last_meta, Py_NewRef(meta));
    }
    return push(d, col + 1, meta);
}

/* ---- names (spark_logsource.tarantool.names) ---- */

static PyObject *call_names(const char *func, PyObject *a, PyObject *b)
{
    PyObject *f = PyObject_GetAttrString(names_module, func);
    if (f == NULL)
        return NULL;
    PyObject *res = b ? PyObject_CallFunctionObjArgs(f, a, b, NULL) : PyObject_CallOneArg(f, a);
    Py_DECREF(f);
    return res;
}

static PyObject *type_name(uint64_t code)
{
    if (code < 256)
        return Py_NewRef(type_name_cache[code]);
    PyObject *n = PyLong_FromUnsignedLongLong(code);
    PyObject *res = n ? call_names("type_name", n, NULL) : NULL;
    Py_XDECREF(n);
    return res;
}

static PyObject *header_key_name(uint64_t code)
{
    if (code < 256)
        return Py_NewRef(header_name_cache[code]);
    PyObject *n = PyLong_FromUnsignedLongLong(code);
    PyObject *res = n ? call_names("header_key_name", n, NULL) : NULL;
    Py_XDECREF(n);
    return res;
}

/* names.body_key_name(type, code): codes >= 0x10 are always the header (IPROTO) names. */
static PyObject *body_key_name(uint64_t rtype, uint64_t code)
{
    if (code >= 0x10)
        return header_key_name(code);
    PyObject *t = PyLong_FromUnsignedLongLong(rtype);
    PyObject *n = t ? PyLong_FromUnsignedLongLong(code) : NULL;
    PyObject *res = n ? call_names("body_key_name", t, n) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(n);
    return res;
}

/* ---- maps of a row ---- */

static int cmp_entry_code(const void *a, const void *b)
{
    const kv_entry *x = a, *y = b;
    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int cmp_entry_index(const void *a, const void *b)
{
    const kv_entry *x = a, *y = b;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/*
 * Python dict semantics for duplicate keys: the last value wins, at the position of the first key.
 * Small maps: quadratic; large ones (only in corrupt data): sort by (code, index).
 */
static void dedupe_entries(ls_buf *entries)
{
    kv_entry *e = (kv_entry *)entries->data;
    size_t n = entries->len / sizeof(kv_entry);
    size_t m = 0;
    if (n <= 16) {
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < m && e[j].code != e[i].code)
                j++;
            if (j < m) {
                uint32_t first = e[j].index;
                e[j] = e[i];
                e[j].index = first;
            } else {
                e[m++] = e[i];
            }
        }
    } else {
        qsort(e, n, sizeof(kv_entry), cmp_entry_code);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j + 1 < n && e[j + 1].code == e[i].code)
                j++;
            uint32_t first = e[i].index;
            e[m] = e[j];
            e[m].index = first;
            m++;
            i = j + 1;
        }
        qsort(e, m, sizeof(kv_entry), cmp_entry_index);
    }
    entries->len = m * sizeof(kv_entry);
}

/* Is `code` a key whose value rows.py decodes (and so may raise on) in this format? */
static int is_decoded_key(const decoder *d, int is_header, uint64_t code)
{
    if (d->fmt != FMT_MSGPACK)
        return 1;
    if (is_header)
        return code <= H_STREAM_ID;
    return code == B_SPACE_ID || code == B_INDEX_ID;
}

/* Read a header or body map into `entries` (deduplicated). Keys must be unsigned integers. */
static int read_map(decoder *d, mp_rd *r, ls_buf *entries, int is_header)
{
    const char *what = is_header ? "header" : "body";
    mp_item it;
    entries->len = 0;
    int rc = mp_next(r, &it);
    if (rc)
        return fail_mp(d, rc, what);
    if (it.kind != MPK_MAP)
        return fail(d, "row %s is not a map", what);
    /* Values nested in a map decoded whole sit one level deeper for msgpack-python's stack limit. */
    int max_depth = d->fmt == FMT_MSGPACK ? MP_MAX_DEPTH : MP_MAX_DEPTH - 1;
    /* it.n is at most half the bytes left (mp_next checked it): the room is bounded by the payload */
    if (ls_buf_reserve(entries, (size_t)it.n * sizeof(kv_entry))) {
        PyErr_NoMemory();
        return -1;
    }
    /* Entries are written field by field in place (a struct built on the stack and copied whole stalled on
     * store forwarding: the flags written by mp_skip, read back as part of a wider load). */
    kv_entry *e = (kv_entry *)entries->data;
    for (uint32_t i = 0; i < it.n; i++) {
        mp_item key;
        rc = mp_next(r, &key);
        if (rc)
            return fail_mp(d, rc, what);
        if (key.kind != MPK_UINT)
            return fail(d, "row %s key is not an unsigned integer", what);
        const uint8_t *val = r->p;
        int flags;
        rc = mp_skip(r, max_depth, &flags);
        if (rc)
            return (flags & MPF_TOO_DEEP) ? fail(d, "msgpack nesting deeper than %d", MP_MAX_DEPTH)
                                          : fail_mp(d, rc, what);
        e[i].code = key.v.u;
        e[i].val = val;
        e[i].len = (size_t)(r->p - val);
        e[i].flags = flags;
        e[i].index = i;
        entries->len += sizeof(kv_entry);
    }
    /* rows.py decodes every such value, even one a later duplicate replaces: the same errors here. Values that
     * stay are decoded again when they are rendered (variant / json), so only the others are decoded now. */
    const kv_entry *all = (const kv_entry *)entries->data;
    size_t count = entries->len / sizeof(kv_entry);
    for (size_t i = 0; i < count; i++) {
        if (!(all[i].flags & MPF_PY) || !is_decoded_key(d, is_header, all[i].code))
            continue;
        int replaced = d->fmt == FMT_MSGPACK; /* msgpack output copies bytes: nothing decodes them later */
        for (size_t j = i + 1; j < count && !replaced; j++)
            replaced = all[j].code == all[i].code;
        if (!replaced)
            continue;
        PyObject *v = py_decode(d, all[i].val, all[i].len);
        if (v == NULL)
            return -1;
        Py_DECREF(v);
    }
    dedupe_entries(entries);
    return 0;
}

/* The decoded msgpack item of an entry's value (scalars only are looked at). */
static int entry_item(const kv_entry *e, mp_item *it)
{
    mp_rd r = {e->val, e->val + e->len};
    return mp_next(&r, it);
}

/* ---- extra ---- */

static void extra_clear(decoder *d)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    for (size_t i = 0; i < n; i++)
        Py_XDECREF(x[i].name);
    d->extra.len = 0;
    Py_CLEAR(d->extra_index);
}

/* Index of member `name` among the first `limit` members, or -1 (-2 on a Python error). */
static Py_ssize_t extra_find(decoder *d, PyObject *name, size_t limit)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    if (limit > n)
        limit = n;
    if (d->extra_index == NULL) {
        for (size_t i = 0; i < limit; i++) {
            int eq = PyUnicode_Compare(x[i].name, name);
            if (eq == -1 && PyErr_Occurred())
                return -2;
            if (eq == 0)
                return (Py_ssize_t)i;
        }
        return -1;
    }
    PyObject *idx = PyDict_GetItemWithError(d->extra_index, name);
    if (idx == NULL)
        return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t i = PyLong_AsSsize_t(idx);
    return (size_t)i < limit ? i : -1;
}

/* extra[name] = value (Python dict semantics: a repeated name keeps its first position). Steals `name`. */
static int extra_put(decoder *d, PyObject *name, const uint8_t *val, size_t len, int flags)
{
    if (name == NULL)
        return -1;
    Py_ssize_t i = extra_find(d, name, SIZE_MAX);
    if (i == -2) {
        Py_DECREF(name);
        return -1;
    }
    if (i >= 0) {
        extra_entry *x = (extra_entry *)d->extra.data + i;
        Py_DECREF(name);
        x->val = val;
        x->len = len;
        x->flags = flags;
        return 0;
    }
    size_t n = d->extra.len / sizeof(extra_entry);
    extra_entry e = {name, val, len, flags};
    if (ls_buf_put(&d->extra, &e, sizeof e)) {
        Py_DECREF(name);
        PyErr_NoMemory();
        return -1;
    }
    if (d->extra_index == NULL && n + 1 > 8) {
        /* Many members (corrupt or exotic rows): switch to a dict index to stay linear. */
        d->extra_index = PyDict_New();
        if (d->extra_index == NULL)
            return -1;
        extra_entry *x = (extra_entry *)d->extra.data;
        for (size_t k = 0; k <= n; k++) {
            PyObject *pos = PyLong_FromSize_t(k);
            if (pos == NULL || PyDict_SetItem(d->extra_index, x[k].name, pos)) {
                Py_XDECREF(pos);
                return -1;
            }
            Py_DECREF(pos);
        }
    } else if (d->extra_index != NULL) {
        PyObject *pos = PyLong_FromSize_t(n);
        if (pos == NULL || PyDict_SetItem(d->extra_index, name, pos)) {
            Py_XDECREF(pos);
            return -1;
        }
        Py_DECREF(pos);
    }
    return 0;
}

/* msgpack.packb(str) header for a string of n bytes (use_bin_type: fixstr, str8, str16, str32). */
static int synth_str(ls_buf *b, const char *s, size_t n)
{
    uint8_t h[5];
    size_t hl;
    if (n < 32) {
        h[0] = (uint8_t)(0xa0 | n);
        hl = 1;
    } else if (n < 256) {
        h[0] = 0xd9;
        h[1] = (uint8_t)n;
        hl = 2;
    } else if (n < 65536) {
        h[0] = 0xda;
        h[1] = (uint8_t)(n >> 8);
        h[2] = (uint8_t)n;
        hl = 3;
    } else {
        h[0] = 0xdb;
        for (int i = 0; i < 4; i++)
            h[1 + i] = (uint8_t)(n >> (24 - 8 * i));
        hl = 5;
    }
    return ls_buf_put(b, h, hl) || ls_buf_put(b, s, n);
}

/* The msgpack map of the extra members (rows._pack_extra): minimal map header, packed names, stored values. */
static int build_extra_msgpack(decoder *d, int *flags)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    ls_buf *b = &d->synth;
    b->len = 0;
    *flags = 0;
    int err;
    if (n < 16) {
        err = ls_buf_byte(b, (uint8_t)(0x80 | n));
    } else if (n < 65536) {
        uint8_t h[3] = {0xde, (uint8_t)(n >> 8), (uint8_t)n};
        err = ls_buf_put(b, h, 3);
    } else {
        uint8_t h[5] = {0xdf, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
        err = ls_buf_put(b, h, 5);
    }
    for (size_t i = 0; i < n && !err; i++) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(x[i].name, &len);
        if (s == NULL)
            return -1;
        err = synth_str(b, s, (size_t)len) || ls_buf_put(b, x[i].val, x[i].len);
        *flags |= x[i].flags;
    }
    if (err) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* ---- one row ---- */

/* Arrow columns: the type name of a row (names.type_name). */
static int arrow_type(acols *s, uint64_t code)
{
    if (code < 256)
        return ac_var(s, A_TYPE, type_text_cache[code], (size_t)type_len_cache[code], 1);
    PyObject *name = type_name(code);
    if (name == NULL)
        return -1;
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(name, &n);
    int rc = text == NULL ? -1 : ac_var(s, A_TYPE, text, (size_t)n, 1);
    Py_DECREF(name);
    return rc;
}

/* Arrow columns: the scalars of a row whose values are written; the row is then complete. */
static int arrow_scalars(decoder *d, uint64_t rtype, uint64_t lsn, uint64_t replica_id, uint64_t tsn, int is_commit,
                         int has_ts, int64_t micros, uint64_t group_id, int64_t space_id, int64_t index_id)
{
    acols *s = d->out;
    if (ac_i64(s, A_OFFSET, d->offset_value, 1) || ac_i64(s, A_LSN, (int64_t)lsn, 1) ||
        ac_i32(s, A_REPLICA_ID, (int32_t)replica_id, 1) || ac_i64(s, A_TSN, (int64_t)tsn, 1) ||
        ac_bool(s, A_IS_COMMIT, is_commit, 1) || ac_i64(s, A_TIMESTAMP, has_ts ? micros : 0, has_ts) ||
        arrow_type(s, rtype) || ac_i32(s, A_GROUP_ID, (int32_t)group_id, 1) ||
        ac_i32(s, A_SPACE_ID, space_id < 0 ? 0 : (int32_t)space_id, space_id >= 0) ||
        ac_i32(s, A_INDEX_ID, index_id < 0 ? 0 : (int32_t)index_id, index_id >= 0) ||
        ac_var(s, A_CORRUPT, NULL, 0, 0))
        return -1;
    s->rows++;
    return 0;
}

static PyObject *int_obj(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }

static int decode_row(decoder *d, mp_rd *r)
{
    if (d->out != NULL && ac_row_room(d->out))
        return -1;
    if (read_map(d, r, &d->header, 1))
        return -1;
    /* Header value checks (rows._check_header) on the deduplicated map. */
    const kv_entry *he = (const kv_entry *)d->header.data;
    size_t hn = d->header.len / sizeof(kv_entry);
    uint64_t rtype = 0, lsn = 0, replica_id = 0, group_id = 0, tsn_raw = 0, flags = 0;
    int has_tsn = 0, has_ts = 0;
    double ts = 0;
    for (size_t i = 0; i < hn; i++) {
        mp_item it;
        uint64_t code = he[i].code;
        if (entry_item(&he[i], &it))
            return fail(d, "malformed header value");
        if (code <= H_STREAM_ID && code != H_TIMESTAMP) {
            if (it.kind != MPK_UINT)
                return fail(d, "header key %llu is not an unsigned integer", (unsigned long long)code);
            switch (code) {
            case H_TYPE: rtype = it.v.u; break;
            case H_LSN: lsn = it.v.u; break;
            case H_REPLICA_ID: replica_id = it.v.u; break;
            case H_GROUP_ID: group_id = it.v.u; break;
            case H_TSN: tsn_raw = it.v.u; has_tsn = 1; break;
            case H_FLAGS: flags = it.v.u; break;
            default: break;
            }
        } else if (code == H_TIMESTAMP) {
            if (it.kind != MPK_FLOAT32 && it.kind != MPK_FLOAT64)
                return fail(d, "header timestamp is not a double");
            ts = it.v.d;
            has_ts = 1;
        }
    }
    /* Body: present unless the row is a NOP not followed by an empty map. */
    int has_body = 0;
    d->body.len = 0;
    if (r->p < r->end && (rtype != TYPE_NOP || *r->p == 0x80)) {
        if (read_map(d, r, &d->body, 0))
            return -1;
        has_body = 1;
    }
    /* Scalars (rows._scalars). */
    if (lsn >= INT63)
        return fail(d, "lsn %llu is out of range", (unsigned long long)lsn);
    if (replica_id >= INT31)
        return fail(d, "replica_id %llu is out of range", (unsigned long long)replica_id);
    if (group_id >= INT31)
        return fail(d, "group_id %llu is out of range", (unsigned long long)group_id);
    uint64_t tsn = lsn;
    int is_commit = 1;
    if (has_tsn) {
        tsn = lsn - tsn_raw; /* mod 2^64 */
        if (tsn >= INT63)
            return fail(d, "transaction id %llu is out of range", (unsigned long long)tsn);
        is_commit = (flags & 1) != 0;
    }
    int64_t micros = 0;
    if (has_ts) {
        if (!isfinite(ts))
            return fail(d, "timestamp is not finite");
        double rounded = nearbyint(ts * 1e6); /* round-half-even, as Python's round() */
        if (!(rounded >= -9223372036854775808.0 && rounded < 9223372036854775808.0))
            return fail(d, "timestamp is out of range");
        micros = (int64_t)rounded;
    }
    const kv_entry *be = (const kv_entry *)d->body.data;
    size_t bn = d->body.len / sizeof(kv_entry);
    int64_t space_id = -1, index_id = -1;
    for (size_t i = 0; i < bn; i++) {
        if (be[i].code != B_SPACE_ID && be[i].code != B_INDEX_ID)
            continue;
        mp_item it;
        if (entry_item(&be[i], &it) || it.kind != MPK_UINT || it.v.u >= INT31)
            return fail(d, "%s is not an unsigned integer below 2147483648",
                        be[i].code == B_SPACE_ID ? "space_id" : "index_id");
        if (be[i].code == B_SPACE_ID)
            space_id = (int64_t)it.v.u;
        else
            index_id = (int64_t)it.v.u;
    }
    /* Split key / tuple / ops / extra (rows._split_values). */
    extra_clear(d);
    for (size_t i = 0; i < hn; i++) {
        uint64_t code = he[i].code;
        if (code == H_TYPE || code == H_REPLICA_ID || code == H_LSN || code == H_TIMESTAMP || code == H_GROUP_ID ||
            code == H_TSN)
            continue;
        if (extra_put(d, header_key_name(code), he[i].val, he[i].len, he[i].flags))
            return -1;
    }
    size_t header_members = d->extra.len / sizeof(extra_entry);
    const kv_entry *key = NULL, *tup = NULL, *ops = NULL;
    if (has_body) {
        uint64_t tuple_code = rtype == TYPE_UPDATE ? B_OPS : B_TUPLE;
        uint64_t ops_code = rtype == TYPE_UPDATE ? B_TUPLE : B_OPS;
        for (size_t i = 0; i < bn; i++) {
            uint64_t code = be[i].code;
            if (code == B_KEY) {
                key = &be[i];
            } else if (code == B_TUPLE && tuple_code == B_TUPLE) {
                tup = &be[i];
            } else if (code == ops_code) {
                ops = &be[i];
            } else if (code != B_SPACE_ID && code != B_INDEX_ID) {
                PyObject *name = body_key_name(rtype, code);
                if (name == NULL)
                    return -1;
                Py_ssize_t clash = header_members ? extra_find(d, name, header_members) : -1;
                if (clash == -2) {
                    Py_DECREF(name);
                    return -1;
                }
                if (clash >= 0) {
                    PyObject *prefixed = PyUnicode_Concat(body_prefix, name);
                    Py_DECREF(name);
                    name = prefixed;
                }
                if (extra_put(d, name, be[i].val, be[i].len, be[i].flags))
                    return -1;
            }
        }
    }
    /* Values. */
    if (put_value(d, V_KEY, key ? key->val : NULL, key ? key->len : 0, key ? key->flags : 0) ||
        put_value(d, V_TUPLE, tup ? tup->val : NULL, tup ? tup->len : 0, tup ? tup->flags : 0) ||
        put_value(d, V_OPS, ops ? ops->val : NULL, ops ? ops->len : 0, ops ? ops->flags : 0))
        return -1;
    if (d->extra.len == 0) {
        if (put_value(d, V_EXTRA, NULL, 0, 0))
            return -1;
    } else {
        int xflags;
        if (build_extra_msgpack(d, &xflags) || put_value(d, V_EXTRA, d->synth.data, d->synth.len, xflags))
            return -1;
    }
    extra_clear(d);
    if (d->out != NULL)
        return arrow_scalars(d, rtype, lsn, replica_id, tsn, is_commit, has_ts, micros, group_id, space_id, index_id);
    /* Scalars last, so that every column grows by exactly one per row or not at all. */
    PyObject *lsn_obj = int_obj(lsn);
    if (push(d, C_LSN, lsn_obj))
        return -1;
    if (push(d, C_REPLICA_ID, int_obj(replica_id)) ||
        push(d, C_TSN, tsn == lsn ? Py_NewRef(lsn_obj) : int_obj(tsn)) ||
        push(d, C_IS_COMMIT, Py_NewRef(is_commit ? Py_True : Py_False)))
        return -1;
    PyObject *ts_obj;
    if (!has_ts) {
        ts_obj = Py_NewRef(Py_None);
    } else if (d->last_ts != NULL && d->last_ts_value == micros) {
        ts_obj = Py_NewRef(d->last_ts);
    } else {
        ts_obj = PyLong_FromLongLong(micros);
        if (ts_obj == NULL)
            return -1;
        Py_XSETREF(d->last_ts, Py_NewRef(ts_obj));
        d->last_ts_value = micros;
    }
    if (push(d, C_TIMESTAMP, ts_obj) || push(d, C_TYPE, type_name(rtype)) || push(d, C_GROUP_ID, int_obj(group_id)) ||
        push(d, C_SPACE_ID, space_id < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(space_id)) ||
        push(d, C_INDEX_ID, index_id < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(index_id)))
        return -1;
    return 0;
}

/* ---- module function ---- */

static void decoder_free(decoder *d)
{
    for (int c = 0; c < MAX_COLS; c++) {
        PyObject **objs = (PyObject **)d->cols[c].data;
        size_t n = d->cols[c].len / sizeof(PyObject *);
        for (size_t i = 0; i < n; i++)
            Py_DECREF(objs[i]);
        ls_buf_free(&d->cols[c]);
    }
    extra_clear(d);
    ls_buf_free(&d->header);
    ls_buf_free(&d->body);
    ls_buf_free(&d->extra);
    ls_buf_free(&d->synth);
    tc_free(&d->tc);
    Py_CLEAR(d->last_ts);
    Py_CLEAR(d->last_meta);
}

/* Move the collected objects into lists of the result dict (keys in rows.output_keys order). */
static PyObject *build_result(decoder *d, size_t nrows)
{
    PyObject *result = PyDict_New();
    if (result == NULL)
        return NULL;
    char name[32];
    for (int c = 0; c < d->ncols; c++) {
        size_t n = d->cols[c].len / sizeof(PyObject *);
        if (n != nrows) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_SystemError, "column lengths differ");
            return NULL;
        }
        PyObject *list = PyList_New((Py_ssize_t)n);
        if (list == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyObject **objs = (PyObject **)d->cols[c].data;
        for (size_t i = 0; i < n; i++)
            PyList_SET_ITEM(list, (Py_ssize_t)i, objs[i]); /* steals */
        d->cols[c].len = 0;
        const char *key;
        if (c < C_NSCALAR) {
            key = SCALAR_NAMES[c];
        } else if (d->fmt == FMT_VARIANT) {
            int v = (c - C_NSCALAR) / 2;
            snprintf(name, sizeof name, "%s.%s", VALUE_NAMES[v], (c - C_NSCALAR) % 2 ? "metadata" : "value");
            key = name;
        } else {
            key = VALUE_NAMES[c - C_NSCALAR];
        }
        int rc = PyDict_SetItemString(result, key, list);
        Py_DECREF(list);
        if (rc) {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

PyDoc_STRVAR(decode_payload_doc,
             "decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list]\n\n"
             "The rows of one Tarantool block payload as equal-length column lists; same contract and output as\n"
             "spark_logsource.tarantool.rows.decode_payload_py. Malformed rows raise\n"
             "CorruptDataError(path, block_offset, 'row N at payload byte P: ...').");

static PyObject *decode_payload(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    const char *tuple_format;
    PyObject *path, *block_offset;
    if (!PyArg_ParseTuple(args, "y*sOO:decode_payload", &buf, &tuple_format, &path, &block_offset))
        return NULL;
    decoder d;
    memset(&d, 0, sizeof d);
    if (strcmp(tuple_format, "variant") == 0) {
        d.fmt = FMT_VARIANT;
    } else if (strcmp(tuple_format, "json") == 0) {
        d.fmt = FMT_JSON;
    } else if (strcmp(tuple_format, "msgpack") == 0) {
        d.fmt = FMT_MSGPACK;
    } else {
        PyBuffer_Release(&buf);
        return PyErr_Format(PyExc_ValueError,
                            "tuple_format must be one of ('variant', 'json', 'msgpack'), got '%s'", tuple_format);
    }
    d.ncols = C_NSCALAR + (d.fmt == FMT_VARIANT ? 2 * V_COUNT : V_COUNT);
    d.base = buf.buf;
    d.end = d.base + buf.len;
    d.path = path;
    d.block_offset = block_offset;
    mp_rd r = {d.base, d.end};
    PyObject *result = NULL;
    size_t nrows = 0;
    while (r.p < r.end) {
        d.row = (Py_ssize_t)nrows;
        d.row_pos = (size_t)(r.p - d.base);
        if (decode_row(&d, &r))
            goto done;
        nrows++;
    }
    result = build_result(&d, nrows);
done:
    decoder_free(&d);
    PyBuffer_Release(&buf);
    return result;
}

/* ---- ColumnBuilder: rows of many blocks -> Arrow columns ---- */

typedef struct {
    PyObject_HEAD
    acols cols;
    decoder d; /* scratch state reused for every block (d.out points at cols) */
} ColumnBuilder;

static int parse_format(const char *tuple_format, int *fmt)
{
    if (strcmp(tuple_format, "variant") == 0) {
        *fmt = FMT_VARIANT;
    } else if (strcmp(tuple_format, "json") == 0) {
        *fmt = FMT_JSON;
    } else if (strcmp(tuple_format, "msgpack") == 0) {
        *fmt = FMT_MSGPACK;
    } else {
        PyErr_Format(PyExc_ValueError, "tuple_format must be one of ('variant', 'json', 'msgpack'), got '%s'",
                     tuple_format);
        return -1;
    }
    return 0;
}

static int builder_init(ColumnBuilder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tuple_format", NULL};
    const char *tuple_format;
    int fmt;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s:ColumnBuilder", kwlist, &tuple_format))
        return -1;
    if (parse_format(tuple_format, &fmt))
        return -1;
    decoder_free(&self->d);
    ac_free(&self->cols);
    memset(&self->d, 0, sizeof self->d);
    if (ac_init(&self->cols)) {
        PyErr_NoMemory();
        return -1;
    }
    self->d.fmt = fmt;
    self->d.ncols = 0; /* no PyObject lists in this mode */
    self->d.out = &self->cols;
    return 0;
}

static void builder_dealloc(ColumnBuilder *self)
{
    decoder_free(&self->d);
    ac_free(&self->cols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int builder_ready(ColumnBuilder *self)
{
    if (self->d.out == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ColumnBuilder.__init__ was not called");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(add_payload_doc,
             "add_payload(payload, path, block_offset) -> int\n\n"
             "Decode the rows of one block payload into the columns; returns how many rows it added. Malformed rows\n"
             "raise CorruptDataError(path, block_offset, 'row N at payload byte P: ...') and add no row at all.");

static PyObject *builder_add_payload(ColumnBuilder *self, PyObject *args)
{
    Py_buffer buf;
    PyObject *path, *block_offset;
    if (builder_ready(self) || !PyArg_ParseTuple(args, "y*OO:add_payload", &buf, &path, &block_offset))
        return NULL;
    decoder *d = &self->d;
    acols *s = &self->cols;
    d->offset_value = PyLong_AsLongLong(block_offset);
    if (d->offset_value == -1 && PyErr_Occurred()) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    d->base = buf.buf;
    d->end = d->base + buf.len;
    d->path = path;
    d->block_offset = block_offset;
    size_t rows0 = s->rows;
    uint64_t bytes0 = s->bytes;
    mp_rd r = {d->base, d->end};
    Py_ssize_t nrows = 0;
    while (r.p < r.end) {
        d->row = nrows;
        d->row_pos = (size_t)(r.p - d->base);
        if (decode_row(d, &r)) {
            extra_clear(d);
            ac_truncate(s, rows0, bytes0);
            nrows = -1;
            break;
        }
        nrows++;
    }
    d->path = d->block_offset = NULL;
    d->base = d->end = NULL;
    PyBuffer_Release(&buf);
    return nrows < 0 ? NULL : PyLong_FromSsize_t(nrows);
}

PyDoc_STRVAR(add_corrupt_doc,
             "add_corrupt(block_offset, message) -> None\n\n"
             "One corrupt-record row: `offset` = block_offset, `corrupt` = message, every other column null.");

static PyObject *builder_add_corrupt(ColumnBuilder *self, PyObject *args)
{
    long long offset;
    const char *message;
    Py_ssize_t len;
    if (builder_ready(self) || !PyArg_ParseTuple(args, "Ls#:add_corrupt", &offset, &message, &len))
        return NULL;
    acols *s = &self->cols;
    size_t rows0 = s->rows;
    uint64_t bytes0 = s->bytes;
    int fmt = self->d.fmt;
    int rc = ac_row_room(s) || ac_i64(s, A_OFFSET, offset, 1) || ac_i64(s, A_LSN, 0, 0) ||
             ac_i32(s, A_REPLICA_ID, 0, 0) || ac_i64(s, A_TSN, 0, 0) || ac_bool(s, A_IS_COMMIT, 0, 0) || ac_i64(s, A_TIMESTAMP, 0, 0) ||
             ac_var(s, A_TYPE, NULL, 0, 0) || ac_i32(s, A_GROUP_ID, 0, 0) || ac_i32(s, A_SPACE_ID, 0, 0) ||
             ac_i32(s, A_INDEX_ID, 0, 0);
    for (int v = 0; v < V_COUNT && !rc; v++)
        rc = ac_var(s, A_KEY + v, NULL, 0, 0) || (fmt == FMT_VARIANT && ac_var(s, A_KEY_META + v, NULL, 0, 1));
    if (!rc)
        rc = ac_var(s, A_CORRUPT, message, (size_t)len, 1);
    if (rc) {
        ac_truncate(s, rows0, bytes0);
        return NULL;
    }
    s->rows++;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(take_doc,
             "take(max_rows, max_bytes, alloc=None) -> (n, columns)\n\n"
             "Remove the first n rows (at most max_rows, and at most max_bytes of values, metadata and messages;\n"
             "at least one row when there is any) and return them: `columns` holds, in COLUMNS order,\n"
             "(null_count, validity bitmap or None, data, offsets or None) per column, or None for a column the\n"
             "tuple format does not have (the metadata of non-variant formats). Buffers are bytes objects, or\n"
             "what alloc(size) returns (an object with a writable buffer, e.g. pyarrow.allocate_buffer).");

static PyObject *builder_take(ColumnBuilder *self, PyObject *args)
{
    Py_ssize_t max_rows;
    unsigned long long max_bytes;
    PyObject *alloc = Py_None;
    if (builder_ready(self) || !PyArg_ParseTuple(args, "nK|O:take", &max_rows, &max_bytes, &alloc))
        return NULL;
    if (max_rows < 1) {
        PyErr_SetString(PyExc_ValueError, "max_rows must be at least 1");
        return NULL;
    }
    acols *s = &self->cols;
    size_t n = ac_batch_rows(s, (size_t)max_rows, max_bytes);
    PyObject *columns = PyTuple_New(A_COUNT);
    if (columns == NULL)
        return NULL;
    for (int c = 0; c < A_COUNT; c++) {
        PyObject *col;
        if (c >= A_KEY_META && c < A_CORRUPT && self->d.fmt != FMT_VARIANT)
            col = Py_NewRef(Py_None);
        else
            col = ac_column(s, c, n, alloc);
        if (col == NULL) {
            Py_DECREF(columns);
            return NULL;
        }
        PyTuple_SET_ITEM(columns, c, col);
    }
    ac_drop_front(s, n);
    return Py_BuildValue("(nN)", (Py_ssize_t)n, columns);
}

static PyObject *builder_rows(ColumnBuilder *self, void *closure) { return PyLong_FromSize_t(self->cols.rows); }

static PyObject *builder_bytes(ColumnBuilder *self, void *closure)
{
    return PyLong_FromUnsignedLongLong(self->cols.bytes);
}

static PyMethodDef builder_methods[] = {
    {"add_payload", (PyCFunction)builder_add_payload, METH_VARARGS, add_payload_doc},
    {"add_corrupt", (PyCFunction)builder_add_corrupt, METH_VARARGS, add_corrupt_doc},
    {"take", (PyCFunction)builder_take, METH_VARARGS, take_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef builder_getset[] = {
    {"rows", (getter)builder_rows, NULL, "rows held", NULL},
    {"bytes", (getter)builder_bytes, NULL, "bytes held that count towards the batch byte cap", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnBuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "spark_logsource.tarantool._kernel.ColumnBuilder",
    .tp_doc = PyDoc_STR("ColumnBuilder(tuple_format): rows of block payloads accumulated as Arrow columns."),
    .tp_basicsize = sizeof(ColumnBuilder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)builder_init,
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_methods = builder_methods,
    .tp_getset = builder_getset,
};

static PyMethodDef kernel_methods[] = {
    {"decode_payload", decode_payload, METH_VARARGS, decode_payload_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    "spark_logsource.tarantool._kernel",
    "Compiled decoder of Tarantool xlog/snap block payloads (see spark_logsource.tarantool.rows).",
    -1,
    kernel_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* Build the name caches and the exception tuple from the Python modules that define them. */
static int init_state(void)
{
    PyObject *errors = PyImport_ImportModule("spark_logsource.errors");
    if (errors == NULL)
        return -1;
    CorruptDataError = PyObject_GetAttrString(errors, "CorruptDataError");
    Py_DECREF(errors);
    if (CorruptDataError == NULL)
        return -1;
    names_module = PyImport_ImportModule("spark_logsource.tarantool.names");
    if (names_module == NULL)
        return -1;
    for (int code = 0; code < 256; code++) {
        PyObject *n = PyLong_FromLong(code);
        if (n == NULL)
            return -1;
        type_name_cache[code] = call_names("type_name", n, NULL);
        header_name_cache[code] = call_names("header_key_name", n, NULL);
        Py_DECREF(n);
        if (type_name_cache[code] == NULL || header_name_cache[code] == NULL)
            return -1;
        PyUnicode_InternInPlace(&type_name_cache[code]);
        type_text_cache[code] = PyUnicode_AsUTF8AndSize(type_name_cache[code], &type_len_cache[code]);
        if (type_text_cache[code] == NULL)
            return -1;
        PyUnicode_InternInPlace(&header_name_cache[code]);
    }
    empty_metadata = PyBytes_FromStringAndSize("\x01\x00\x00", 3);
    empty_bytes = PyBytes_FromStringAndSize("", 0);
    body_prefix = PyUnicode_FromString("body_");
    PyObject *msgpack_exc = PyImport_ImportModule("msgpack.exceptions");
    PyObject *unpack_exc = msgpack_exc ? PyObject_GetAttrString(msgpack_exc, "UnpackException") : NULL;
    Py_XDECREF(msgpack_exc);
    if (unpack_exc == NULL || empty_metadata == NULL || empty_bytes == NULL || body_prefix == NULL)
        return -1;
    catchable = PyTuple_Pack(5, PyExc_ValueError, PyExc_TypeError, PyExc_OverflowError, PyExc_RecursionError,
                             unpack_exc);
    Py_DECREF(unpack_exc);
    return catchable ? 0 : -1;
}

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (init_state() || PyType_Ready(&ColumnBuilderType))
        return NULL;
    PyObject *module = PyModule_Create(&kernel_module);
    if (module == NULL)
        return NULL;
    PyObject *names = PyTuple_New(A_COUNT);
    static const char *const column_names[A_COUNT] = {
        "offset", "lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id",
        "key", "tuple", "ops", "extra", "key.metadata", "tuple.metadata", "ops.metadata", "extra.metadata", "corrupt",
    };
    for (int c = 0; names != NULL && c < A_COUNT; c++) {
        PyObject *name = PyUnicode_FromString(column_names[c]);
        if (name == NULL)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, c, name);
    }
    int rc = names == NULL || PyModule_AddObjectRef(module, "COLUMNS", names) ||
             PyModule_AddObjectRef(module, "ColumnBuilder", (PyObject *)&ColumnBuilderType);
    Py_XDECREF(names);
    if (rc) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
