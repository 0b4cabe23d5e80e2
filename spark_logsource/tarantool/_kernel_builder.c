/*
 * spark_logsource.tarantool._kernel, ColumnBuilder(tuple_format): the rows of many block payloads accumulated as
 * Arrow columns (_arrow.h), the twin of columns.PyColumnBuilder; a block whose rows fail adds none.
 */
#include "_kernel.h"

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
    tt_decoder_free(&self->d);
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
    tt_decoder_free(&self->d);
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
             "raise tt_CorruptDataError(path, block_offset, 'row N at payload byte P: ...') and add no row at all.");

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
        if (tt_decode_row(d, &r)) {
            tt_extra_clear(d);
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

PyTypeObject tt_ColumnBuilderType = {
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
