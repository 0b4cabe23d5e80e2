/*
 * spark_logsource.tarantool._kernel: the compiled twin of spark_logsource.tarantool.decode.rows.decode_payload_py.
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
 * _arrow.h (Arrow buffers), the parts of this module (rows -> columns, errors, the Python module; _kernel.h names
 * them). A value the C transcoders do not render themselves (Tarantool decimal/datetime/interval/error ext,
 * unknown ext, invalid UTF-8, map or array as a map key, very deep nesting) is decoded and encoded by the Python
 * reference for that one value, so the output is the same by construction. Only the CPython C API is used.
 *
 * One concern per file (_kernel.h names them): this one is the module, its state and the errors every part raises.
 */
#include "_kernel.h"

/* ---- module-level state (created once at import; _kernel.h) ---- */
PyObject *tt_CorruptDataError;   /* spark_logsource.errors.CorruptDataError */
PyObject *tt_names_module;       /* spark_logsource.tarantool.decode.names */
PyObject *tt_type_name_cache[256];
const char *tt_type_text_cache[256]; /* UTF-8 of type_name_cache (owned by those objects) */
Py_ssize_t tt_type_len_cache[256];
PyObject *tt_header_name_cache[256];
PyObject *tt_empty_metadata;     /* b"\x01\x00\x00" */
PyObject *tt_empty_bytes;        /* b"" */
PyObject *tt_body_prefix;        /* "body_" */
PyObject *tt_catchable;          /* exceptions rows.py turns into CorruptDataError */

/* ---- errors ---- */

/* Raise CorruptDataError(path, block_offset, "row N at payload byte P: <reason>"); returns -1. */
static int fail_obj(decoder *d, PyObject *reason)
{
    PyObject *msg = reason ? PyUnicode_FromFormat("row %zd at payload byte %zu: %U", d->row, d->row_pos, reason) : NULL;
    if (msg != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(tt_CorruptDataError, d->path, d->block_offset, msg, NULL);
        if (exc != NULL) {
            PyErr_SetObject(tt_CorruptDataError, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(msg);
    }
    return -1;
}

int tt_fail(decoder *d, const char *format, ...)
{
    va_list va;
    va_start(va, format);
    PyObject *reason = PyUnicode_FromFormatV(format, va);
    va_end(va);
    int rc = fail_obj(d, reason);
    Py_XDECREF(reason);
    return rc;
}

int tt_fail_mp(decoder *d, int rc, const char *what)
{
    if (rc == MP_ETRUNC)
        return tt_fail(d, "msgpack value truncated by the payload end (%s)", what);
    return tt_fail(d, "malformed msgpack in the %s", what);
}

/* The pending Python exception, if rows.py would catch it, becomes a CorruptDataError for this row. */
int tt_convert_py_error(decoder *d)
{
    if (!PyErr_ExceptionMatches(tt_catchable))
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


/* ---- names (spark_logsource.tarantool.decode.names) ---- */

PyObject *tt_call_names(const char *func, PyObject *a, PyObject *b)
{
    PyObject *f = PyObject_GetAttrString(tt_names_module, func);
    if (f == NULL)
        return NULL;
    PyObject *res = b ? PyObject_CallFunctionObjArgs(f, a, b, NULL) : PyObject_CallOneArg(f, a);
    Py_DECREF(f);
    return res;
}

PyObject *tt_type_name(uint64_t code)
{
    if (code < 256)
        return Py_NewRef(tt_type_name_cache[code]);
    PyObject *n = PyLong_FromUnsignedLongLong(code);
    PyObject *res = n ? tt_call_names("type_name", n, NULL) : NULL;
    Py_XDECREF(n);
    return res;
}

PyObject *tt_header_key_name(uint64_t code)
{
    if (code < 256)
        return Py_NewRef(tt_header_name_cache[code]);
    PyObject *n = PyLong_FromUnsignedLongLong(code);
    PyObject *res = n ? tt_call_names("header_key_name", n, NULL) : NULL;
    Py_XDECREF(n);
    return res;
}

/* names.body_key_name(type, code): codes >= 0x10 are always the header (IPROTO) names. */
PyObject *tt_body_key_name(uint64_t rtype, uint64_t code)
{
    if (code >= 0x10)
        return tt_header_key_name(code);
    PyObject *t = PyLong_FromUnsignedLongLong(rtype);
    PyObject *n = t ? PyLong_FromUnsignedLongLong(code) : NULL;
    PyObject *res = n ? tt_call_names("body_key_name", t, n) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(n);
    return res;
}


static PyMethodDef kernel_methods[] = {
    {"decode_payload", tt_decode_payload, METH_VARARGS, tt_decode_payload_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    "spark_logsource.tarantool._kernel",
    "Compiled decoder of Tarantool xlog/snap block payloads (see spark_logsource.tarantool.decode.rows).",
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
    tt_CorruptDataError = PyObject_GetAttrString(errors, "CorruptDataError");
    Py_DECREF(errors);
    if (tt_CorruptDataError == NULL)
        return -1;
    tt_names_module = PyImport_ImportModule("spark_logsource.tarantool.decode.names");
    if (tt_names_module == NULL)
        return -1;
    for (int code = 0; code < 256; code++) {
        PyObject *n = PyLong_FromLong(code);
        if (n == NULL)
            return -1;
        tt_type_name_cache[code] = tt_call_names("type_name", n, NULL);
        tt_header_name_cache[code] = tt_call_names("header_key_name", n, NULL);
        Py_DECREF(n);
        if (tt_type_name_cache[code] == NULL || tt_header_name_cache[code] == NULL)
            return -1;
        PyUnicode_InternInPlace(&tt_type_name_cache[code]);
        tt_type_text_cache[code] = PyUnicode_AsUTF8AndSize(tt_type_name_cache[code], &tt_type_len_cache[code]);
        if (tt_type_text_cache[code] == NULL)
            return -1;
        PyUnicode_InternInPlace(&tt_header_name_cache[code]);
    }
    tt_empty_metadata = PyBytes_FromStringAndSize("\x01\x00\x00", 3);
    tt_empty_bytes = PyBytes_FromStringAndSize("", 0);
    tt_body_prefix = PyUnicode_FromString("body_");
    PyObject *msgpack_exc = PyImport_ImportModule("msgpack.exceptions");
    PyObject *unpack_exc = msgpack_exc ? PyObject_GetAttrString(msgpack_exc, "UnpackException") : NULL;
    Py_XDECREF(msgpack_exc);
    if (unpack_exc == NULL || tt_empty_metadata == NULL || tt_empty_bytes == NULL || tt_body_prefix == NULL)
        return -1;
    tt_catchable = PyTuple_Pack(5, PyExc_ValueError, PyExc_TypeError, PyExc_OverflowError, PyExc_RecursionError,
                             unpack_exc);
    Py_DECREF(unpack_exc);
    return tt_catchable ? 0 : -1;
}

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (init_state() || PyType_Ready(&tt_ColumnBuilderType))
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
             PyModule_AddObjectRef(module, "ColumnBuilder", (PyObject *)&tt_ColumnBuilderType);
    Py_XDECREF(names);
    if (rc) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
