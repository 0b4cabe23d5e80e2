/*
 * Output memory for Arrow buffers written by the kernels (tarantool/_arrow.h, memcached/_kernel.c).
 *
 * Kernels that hand Arrow columns to Python (wrapped there with pa.Array.from_buffers) ask the caller's allocator
 * for each buffer: pyarrow.allocate_buffer gives memory from Arrow's pool, which hands the same pages back batch
 * after batch instead of fresh ones that each cost a page fault. Layouts: the Arrow columnar format.
 */
#ifndef SPARK_LOGSOURCE_ARROW_OUT_H
#define SPARK_LOGSOURCE_ARROW_OUT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* An output buffer of n bytes: from `alloc(n)` (any object with a writable buffer of at least n bytes) or, when
 * alloc is None, a bytes object. *data points into it; the memory belongs to the returned object, which the caller
 * keeps while writing. NULL with a Python error set on failure. */
static PyObject *ls_arrow_out(PyObject *alloc, size_t n, uint8_t **data)
{
    if (alloc == Py_None) {
        PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
        if (out != NULL)
            *data = (uint8_t *)PyBytes_AS_STRING(out);
        return out;
    }
    PyObject *out = PyObject_CallFunction(alloc, "n", (Py_ssize_t)n);
    if (out == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE)) {
        Py_DECREF(out);
        return NULL;
    }
    *data = view.buf;
    Py_ssize_t len = view.len;
    PyBuffer_Release(&view);
    if ((size_t)len < n) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_ValueError, "the allocator returned a buffer smaller than asked");
        return NULL;
    }
    return out;
}

#endif
