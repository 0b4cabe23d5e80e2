/*
 * spark_logsource.mysql._kernel: the compiled twin of spark_logsource.mysql.encode.images.encode_rows_event_py, and
 * of view=table's conversion of the decoded values into typed columns (table/kernel.py; _typed.h).
 *
 *     compile_plan(specs, order, metadata, json_keys) -> plan (a capsule)
 *     encode_rows(data, pos, plan, plan_after, op, as_json, data_base, in_block, label) -> (n, first, second)
 *     compile_typed(convs) -> typed (a capsule)
 *     typed_rows(data, pos, plan, plan_after, typed, typed_after, op, data_base, in_block, label)
 *         -> (n, first, second) or None
 *     encode_rows_run(...): a run of rows events of one table and shape, as encode_rows or typed_rows
 *     json_variant(text) -> (value, metadata) or None: a JSON column's Variant (../_native/_json_variant.h)
 *
 * first / second are the images of one side as Arrow column parts, (ends, data, meta_ends, meta): int32 end
 * offsets and the bytes back to back, for the image (Variant value or UTF-8 JSON text) and, for Variant, its
 * metadata (None, None for JSON); second is None unless the event is an UPDATE.
 *
 * encode_rows decodes the row images of one rows event (data[pos:] holds them back to back: mysql-server
 * sql/rpl_record.cc unpack_row; docs/formats/mysql-binlog.md "Rows events"): per image a NULL bitmap over the PRESENT columns,
 * then the values of the present non-NULL columns. Each image becomes either compact JSON text (the text
 * spark_logsource.arrow.jsontext.to_json gives the row dict of rows.py) or a Spark Variant value (the bytes
 * spark_logsource.arrow.variant.encode_variant gives it; the metadata, which only depends on the image's key set, is
 * computed once per plan by encode_variant itself in encode/images.py).
 *
 * One concern per file (_kernel.h names them): this one is the module, its exception classes and the errors every
 * part raises. The kernel knows buffers, not files (docs/ARCHITECTURE.md): its data errors are the decoders'
 * mysql.decode.packed.BinlogDecodeError, whose position is the file offset already (data_base + position) and whose
 * kind is the public class; the Python caller, which knows the file, turns it into that class with the path.
 */
#include "_kernel.h"

#include "_typed.h" /* the S_* / T_* constants the module exports */

PyObject *mk_CorruptDataError;
PyObject *mk_TruncatedDataError;
static PyObject *mk_BinlogDecodeError;

/* ---- errors ---------------------------------------------------------------------------------------------- */

static long long where(const mk_ctx *x, size_t p)
{
    return x->in_block ? x->data_base : x->data_base + (long long)p;
}

int mk_raise_error(PyObject *cls, mk_ctx *x, size_t p, PyObject *msg)
{
    if (msg == NULL)
        return MK_ERR;
    PyObject *off = PyLong_FromLongLong(where(x, p));
    if (off != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(mk_BinlogDecodeError, off, msg, cls, NULL);
        if (exc != NULL) {
            PyErr_SetObject(mk_BinlogDecodeError, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(off);
    }
    Py_DECREF(msg);
    return MK_ERR;
}

/* rows.py: "row N of db.t cut short" at the row's start (IndexError / struct.error in values.py). */
int mk_trunc_row(mk_ctx *x, size_t row_start)
{
    return mk_raise_error(mk_TruncatedDataError, x, row_start,
                          PyUnicode_FromFormat("row %zd of %U cut short", x->nrows, x->label));
}

/* rows.py: "row N of db.t: WHAT cut short" at the value's start (ValueTruncated). */
int mk_trunc_value(mk_ctx *x, size_t pos, const char *what)
{
    return mk_raise_error(mk_TruncatedDataError, x, pos,
                          PyUnicode_FromFormat("row %zd of %U: %s cut short", x->nrows, x->label, what));
}

int mk_nomem(void)
{
    PyErr_NoMemory();
    return MK_ERR;
}

/* ---- module ------------------------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"compile_plan", mk_compile_plan, METH_VARARGS,
     "compile_plan(specs, order, metadata, json_keys) -> plan\n\nThe compiled description of one row-image shape "
     "(see encode/images.py _plan)."},
    {"encode_rows", mk_encode_rows, METH_VARARGS,
     "encode_rows(data, pos, plan, plan_after, op, as_json, data_base, in_block, label) -> (n, first, second)"
     "\n\nEncode the row images of one rows event (see encode/images.py encode_rows_event_c)."},
    {"encode_rows_run", mk_encode_rows_run, METH_VARARGS,
     "encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size, "
     "post_header_len, v2, table_id, ncols, present, present_after, plan, plan_after, typed, typed_after, op, "
     "as_json, label, max_rows, max_bytes[, map_body, skip_notes]) -> (events, nrows, first, second)\n\n"
     "Encode a run of rows events "
     "of one table and shape (see encode/runs.py), as typed columns when typed is not None (see table/kernel.py)."},
    {"compile_typed", mk_compile_typed, METH_VARARGS,
     "compile_typed(convs) -> typed\n\nThe conversions of one image shape's present columns to view=table's typed "
     "columns (see table/kernel.py)."},
    {"typed_rows", mk_typed_rows, METH_VARARGS,
     "typed_rows(data, pos, plan, plan_after, typed, typed_after, op, data_base, in_block, label) -> (n, "
     "first, second) or None\n\nThe row images of one rows event as typed columns (see table/kernel.py)."},
    {"json_variant", mk_json_variant, METH_VARARGS,
     "json_variant(text) -> (value, metadata) or None\n\nThe Variant of a JSON text as view=table's JSON columns "
     "get it; None where the Python reference decides (see _json_variant.h)."},
    {"json_variants", mk_json_variants, METH_O,
     "json_variants(texts) -> list\n\njson_variant of each text, converted one after another with one scratch state "
     "(as a column's values are: the metadata of repeated keys is reused)."},
    {"rows_head", mk_rows_head, METH_VARARGS,
     "rows_head(body, table_id_size, post_header_len, v2, update) -> (table_id, flags, pos, ncols, present, "
     "present_after) or None\n\nThe head of a well-formed uncompressed rows event (None: use rows.rows_head)."},
    {"crc32", mk_crc32, METH_VARARGS,
     "crc32(data, value=0) -> int\n\nzlib.crc32(data, value), as binlog events are checked (see _crc32.h)."},
    {"crc32_folds", mk_crc32_folds, METH_NOARGS,
     "crc32_folds() -> bool\n\nWhether crc32 folds with PCLMULQDQ here (else events are checked with zlib.crc32)."},
    {"set_crc32_folding", mk_set_crc32_folding, METH_O,
     "set_crc32_folding(on) -> bool\n\nFold where the processor can (True) or never (False: the run walk calls "
     "zlib.crc32 back); returns crc32_folds()."},
    {"text_columns", mk_text_columns, METH_VARARGS,
     "text_columns(kinds, label) -> cols\n\nColumn builders of the snapshot's bulk SELECT reader (see "
     "snapshot/fast.py)."},
    {"text_feed", mk_text_feed, METH_VARARGS,
     "text_feed(cols, data, parse) -> (consumed, status)\n\nThe whole row packets of a block, into the columns "
     "(see _kernel_text.c)."},
    {"text_declined", mk_text_declined, METH_O,
     "text_declined(cols) -> None or (row, column)\n\nThe first value the reader left to the Python path."},
    {"text_take", mk_text_take, METH_O,
     "text_take(cols) -> (nrows, parts)\n\nThe columns so far as Arrow column parts; the builders start again."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spark_logsource.mysql._kernel",
    "Compiled MySQL/MariaDB row images -> Variant / JSON (twin of encode/images.py encode_rows_event_py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    PyObject *errors = PyImport_ImportModule("spark_logsource.errors");
    if (errors == NULL)
        return NULL;
    mk_CorruptDataError = PyObject_GetAttrString(errors, "CorruptDataError");
    mk_TruncatedDataError = PyObject_GetAttrString(errors, "TruncatedDataError");
    Py_DECREF(errors);
    if (mk_CorruptDataError == NULL || mk_TruncatedDataError == NULL)
        return NULL;
    PyObject *packed = PyImport_ImportModule("spark_logsource.mysql.decode.packed");
    if (packed == NULL)
        return NULL;
    mk_BinlogDecodeError = PyObject_GetAttrString(packed, "BinlogDecodeError");
    Py_DECREF(packed);
    if (mk_BinlogDecodeError == NULL)
        return NULL;
    mk_crc32_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* The plan compiler in encode/images.py speaks these numbers: export them so a test can compare. */
    static const struct { const char *name; int value; } constants[] = {
        {"K_NULL", K_NULL}, {"K_INT", K_INT}, {"K_FLOAT", K_FLOAT}, {"K_DOUBLE", K_DOUBLE},
        {"K_DECIMAL", K_DECIMAL}, {"K_DATE", K_DATE}, {"K_YEAR", K_YEAR}, {"K_DATETIME2", K_DATETIME2},
        {"K_TIMESTAMP2", K_TIMESTAMP2}, {"K_TIME2", K_TIME2}, {"K_TIMESTAMP_OLD", K_TIMESTAMP_OLD},
        {"K_DATETIME_OLD", K_DATETIME_OLD}, {"K_TIME_OLD", K_TIME_OLD}, {"K_TEXT", K_TEXT}, {"K_ENUM", K_ENUM},
        {"K_SET", K_SET}, {"K_BIT", K_BIT}, {"CS_UTF8", CS_UTF8}, {"CS_BINARY", CS_BINARY},
        {"CS_TABLE", CS_TABLE}, {"CS_CODEC", CS_CODEC},
        {"S_NONE", S_NONE}, {"S_INT", S_INT}, {"S_YEAR", S_YEAR}, {"S_FLOAT", S_FLOAT}, {"S_DECIMAL", S_DECIMAL},
        {"S_DATE", S_DATE}, {"S_DATETIME", S_DATETIME}, {"S_TIMESTAMP", S_TIMESTAMP}, {"S_TEXT", S_TEXT},
        {"S_BIT", S_BIT}, {"S_BYTES", S_BYTES}, {"S_RAW", S_RAW}, {"S_JSON", S_JSON}, {"T_INT8", T_INT8},
        {"T_INT16", T_INT16},
        {"T_INT32", T_INT32}, {"T_INT64", T_INT64}, {"T_FLOAT32", T_FLOAT32}, {"T_FLOAT64", T_FLOAT64},
        {"T_DECIMAL", T_DECIMAL}, {"T_DATE32", T_DATE32}, {"T_TIMESTAMP", T_TIMESTAMP}, {"T_STRING", T_STRING},
        {"T_BINARY", T_BINARY}, {"T_RAW", T_RAW}, {"T_VARIANT", T_VARIANT},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
