/*
 * spark_logsource.tarantool._kernel, values: one stored msgpack value (key, tuple, ops, extra) -> its column entry,
 * transcoded here (_variant.h / _jsonw.h) or, for what the transcoders leave to it, by the Python reference for
 * that one value (rows._unpacker, rows.variant_of, jsontext.to_json), so the output is the same by construction.
 */
#include "_kernel.h"

static PyObject *py_unpacker;        /* rows._unpacker (lazy: rows imports this module) */
static PyObject *py_encode_variant;  /* spark_logsource.tarantool.decode.rows.variant_of (lazy) */
static PyObject *py_to_json;         /* spark_logsource.arrow.jsontext.to_json (lazy) */

/* ---- the Python path for single values ---- */

static int load_python_path(void)
{
    if (py_unpacker != NULL)
        return 0;
    PyObject *rows = PyImport_ImportModule("spark_logsource.tarantool.decode.rows");
    if (rows == NULL)
        return -1;
    PyObject *unpacker = PyObject_GetAttrString(rows, "_unpacker");
    /* rows.variant_of: encode_variant, with strings of invalid UTF-8 turned into binary (the reference's rule) */
    PyObject *encode = unpacker ? PyObject_GetAttrString(rows, "variant_of") : NULL;
    Py_DECREF(rows);
    PyObject *jsontext = encode ? PyImport_ImportModule("spark_logsource.arrow.jsontext") : NULL;
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
PyObject *tt_py_decode(decoder *d, const uint8_t *val, size_t len)
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
        tt_convert_py_error(d);
    return value;
}

/* Encode one stored value through the Python reference: *out = str (json) or *out, *meta = bytes (variant). */
static int py_encode(decoder *d, const uint8_t *val, size_t len, PyObject **out, PyObject **meta)
{
    PyObject *value = tt_py_decode(d, val, len);
    if (value == NULL)
        return -1;
    PyObject *res = PyObject_CallOneArg(d->fmt == FMT_VARIANT ? py_encode_variant : py_to_json, value);
    Py_DECREF(value);
    if (res == NULL)
        return tt_convert_py_error(d);
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
int tt_put_value(decoder *d, int v, const uint8_t *val, size_t len, int flags)
{
    int col = value_col(d, v);
    if (d->out != NULL && (val == NULL || d->fmt == FMT_MSGPACK))
        return arrow_value(d, v, val, len, NULL, 0);
    if (val == NULL) {
        if (tt_push(d, col, Py_NewRef(Py_None)))
            return -1;
        return d->fmt == FMT_VARIANT ? tt_push(d, col + 1, Py_NewRef(tt_empty_bytes)) : 0;
    }
    if (d->fmt == FMT_MSGPACK)
        return tt_push(d, col, PyBytes_FromStringAndSize((const char *)val, (Py_ssize_t)len));
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
        if (tt_push(d, col, out))
            return -1;
        return d->fmt == FMT_VARIANT ? tt_push(d, col + 1, meta) : 0;
    }
    const ls_buf *o = &d->tc.out;
    if (d->out != NULL)
        return arrow_value(d, v, o->data, o->len, d->tc.meta.data, d->tc.meta.len);
    if (d->fmt == FMT_JSON) {
        if (!d->tc.nonascii) {
            PyObject *s = PyUnicode_New((Py_ssize_t)o->len, 127);
            if (s != NULL)
                memcpy(PyUnicode_DATA(s), o->data, o->len);
            return tt_push(d, col, s);
        }
        return tt_push(d, col, PyUnicode_DecodeUTF8((const char *)o->data, (Py_ssize_t)o->len, "strict"));
    }
    if (tt_push(d, col, PyBytes_FromStringAndSize((const char *)o->data, (Py_ssize_t)o->len)))
        return -1;
    const ls_buf *m = &d->tc.meta;
    PyObject *meta;
    if (m->len == 3 && memcmp(m->data, "\x01\x00\x00", 3) == 0) {
        meta = Py_NewRef(tt_empty_metadata);
    } else if (d->last_meta != NULL && (size_t)PyBytes_GET_SIZE(d->last_meta) == m->len &&
               memcmp(PyBytes_AS_STRING(d->last_meta), m->data, m->len) == 0) {
        meta = Py_NewRef(d->last_meta);
    } else {
        meta = PyBytes_FromStringAndSize((const char *)m->data, (Py_ssize_t)m->len);
        if (meta == NULL)
            return -1;
        Py_XSETREF(d->last_meta, Py_NewRef(meta));
    }
    return tt_push(d, col + 1, meta);
}

