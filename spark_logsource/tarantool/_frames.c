/*
 * C twin of PacketBuffer._take_rows_py (spark_logsource/tarantool/stream/client.py): the hot loop of the live
 * Tarantool reader. Both must give the same result for every input (tests/tarantool_live compares them).
 *
 * take_rows(buf, pos, limit, max_packet, out, bounds) -> (new_pos, stopped_at_other)
 *
 * From byte `pos` of `buf`, takes up to `limit` complete packets of the usual row shape:
 *   0xce, uint32 BE size, then a header map (fixmap of 2..15 entries) starting {0: type, 1: sync, ...}
 *   with 0 < type < 0x80, sync < 0x80, 5 <= size <= max_packet.
 * Each is appended to the bytearray `out` without its length prefix and without its sync entry (the map
 * count decremented), and the new length of `out` is appended to the list `bounds`. Stops at the first
 * packet of another shape (returns stopped_at_other = True), at an incomplete packet, or after `limit`.
 * Layout facts: docs/formats/tarantool-replication.md ("Packets", "Streaming rows").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int usual_row(const unsigned char *b, Py_ssize_t p, Py_ssize_t max_packet, uint32_t *size_out) {
    if (b[p] != 0xce) return 0;
    uint32_t size = ((uint32_t)b[p + 1] << 24) | ((uint32_t)b[p + 2] << 16) | ((uint32_t)b[p + 3] << 8) | b[p + 4];
    unsigned char b0 = b[p + 5], k0 = b[p + 6], t = b[p + 7], k1 = b[p + 8], sync = b[p + 9];
    if (k0 != 0 || k1 != 1 || b0 < 0x82 || b0 > 0x8f || t == 0 || t >= 0x80 || sync >= 0x80) return 0;
    if (size < 5 || (Py_ssize_t)size > max_packet) return 0;
    *size_out = size;
    return 1;
}

static PyObject *take_rows(PyObject *self, PyObject *args) {
    Py_buffer in;
    Py_ssize_t pos, limit, max_packet;
    PyObject *out, *bounds;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnnO!O!", &in, &pos, &limit, &max_packet, &PyByteArray_Type, &out,
                          &PyList_Type, &bounds))
        return NULL;
    const unsigned char *b = (const unsigned char *)in.buf;
    Py_ssize_t n = in.len;
    if (pos < 0 || pos > n) {
        PyBuffer_Release(&in);
        PyErr_SetString(PyExc_ValueError, "pos outside the buffer");
        return NULL;
    }
    /* First pass: how many rows and bytes, so that `out` grows once. */
    Py_ssize_t p = pos, add = 0, count = 0;
    int other = 0;
    while (count < limit && p + 10 <= n) {
        uint32_t size;
        if (!usual_row(b, p, max_packet, &size)) {
            other = 1;
            break;
        }
        Py_ssize_t end = p + 5 + (Py_ssize_t)size;
        if (end > n) break;
        add += (Py_ssize_t)size - 2;
        count++;
        p = end;
    }
    Py_ssize_t old = PyByteArray_GET_SIZE(out);
    if (count > 0 && PyByteArray_Resize(out, old + add) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    char *o = PyByteArray_AS_STRING(out) + old;
    Py_ssize_t olen = old;
    p = pos;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t size = ((uint32_t)b[p + 1] << 24) | ((uint32_t)b[p + 2] << 16) | ((uint32_t)b[p + 3] << 8) | b[p + 4];
        o[0] = (char)(b[p + 5] - 1);
        o[1] = 0;
        o[2] = (char)b[p + 7];
        memcpy(o + 3, b + p + 10, (size_t)size - 5);
        o += size - 2;
        olen += (Py_ssize_t)size - 2;
        PyObject *v = PyLong_FromSsize_t(olen);
        if (v == NULL || PyList_Append(bounds, v) < 0) {
            Py_XDECREF(v);
            PyBuffer_Release(&in);
            return NULL;
        }
        Py_DECREF(v);
        p += 5 + (Py_ssize_t)size;
    }
    PyBuffer_Release(&in);
    return Py_BuildValue("nO", p, other ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"take_rows", take_rows, METH_VARARGS, "Move complete row packets of the usual shape into a payload."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frames", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__frames(void) { return PyModule_Create(&module); }
