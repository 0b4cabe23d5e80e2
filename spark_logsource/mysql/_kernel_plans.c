/*
 * spark_logsource.mysql._kernel, plans: compile_plan(specs, order, metadata, json_keys) -> a capsule holding the
 * compiled description of one row-image shape (encode/images.py _plan): per present column its value kind and
 * arguments, ENUM / SET names, charset table or codec, JSON member prefix and the name its truncation messages
 * give, with the sorted key order of the image's Variant object. Every item is checked here, once per shape, so
 * the decoders can trust it.
 */
#include "_kernel.h"

#include "_decimal.h"

static const char PLAN_CAPSULE[] = "spark_logsource.mysql._kernel.plan";

static void plan_free(mk_plan *plan)
{
    if (plan == NULL)
        return;
    if (plan->cols != NULL)
        for (Py_ssize_t j = 0; j < plan->n; j++)
            PyMem_Free(plan->cols[j].table);
    PyMem_Free(plan->cols);
    PyMem_Free(plan->order);
    PyMem_Free(plan->name_off);
    PyMem_Free(plan->name_len);
    Py_XDECREF(plan->metadata);
    ls_buf_free(&plan->blob);
    PyMem_Free(plan);
}

static void plan_capsule_destructor(PyObject *capsule)
{
    plan_free((mk_plan *)PyCapsule_GetPointer(capsule, PLAN_CAPSULE));
}

/* Append a NUL-terminated copy of s to the blob; returns its offset or (size_t)-1. */
static size_t blob_str(ls_buf *blob, const char *s, size_t n)
{
    size_t at = blob->len;
    if (ls_buf_put(blob, s, n) || ls_buf_byte(blob, 0))
        return (size_t)-1;
    return at;
}

/* Columns whose truncation rows.py reports at the row's start (struct.error / IndexError in values.py). */
static int truncates_at_row_start(int kind, int width)
{
    switch (kind) {
    case K_INT:
        return width != 3;
    case K_FLOAT:
    case K_DOUBLE:
    case K_YEAR:
    case K_TIMESTAMP_OLD:
    case K_DATETIME_OLD:
    case K_ENUM:
        return 1;
    default:
        return 0;
    }
}

int mk_long_item(PyObject *tuple, Py_ssize_t i, int lo, int hi, int *out)
{
    long v = PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "plan item %zd = %ld is outside %d..%d", i, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Fill plan->cols[j] from spec (kind, a, b, c, names, codec, table, what); deferred offsets fixed later. */
static int plan_column(mk_plan *plan, Py_ssize_t j, PyObject *spec, PyObject *json_key, size_t *what_off,
                       size_t *codec_off, PyObject **names_out)
{
    mk_col *col = &plan->cols[j];
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 8) {
        PyErr_SetString(PyExc_TypeError, "a column spec is an 8-tuple");
        return -1;
    }
    if (mk_long_item(spec, 0, 0, K_NKINDS - 1, &col->kind) || mk_long_item(spec, 1, 0, 255, &col->a) ||
        mk_long_item(spec, 2, 0, 255, &col->b) || mk_long_item(spec, 3, 0, MAX_DECIMAL_DIGITS, &col->c))
        return -1;
    if (col->kind == K_INT && col->a != 1 && col->a != 2 && col->a != 3 && col->a != 4 && col->a != 8)
        return PyErr_Format(PyExc_ValueError, "integer width %d", col->a), -1;
    if (col->kind == K_TEXT && (col->a < 1 || col->a > 4 || col->b > CS_CODEC))
        return PyErr_Format(PyExc_ValueError, "text prefix %d / charset %d", col->a, col->b), -1;
    if ((col->kind == K_ENUM && col->a != 1 && col->a != 2) || ((col->kind == K_SET || col->kind == K_BIT) &&
                                                                col->a > 8) || (col->kind == K_SET && col->a < 1))
        return PyErr_Format(PyExc_ValueError, "ENUM/SET/BIT width %d", col->a), -1;
    if (col->kind == K_DECIMAL) {
        int precision = col->a, scale = col->b;
        if (precision < 1 || scale > precision)
            return PyErr_Format(PyExc_ValueError, "DECIMAL(%d,%d)", precision, scale), -1;
        int size = decimal_size(precision, scale);
        if (size != col->c)
            return PyErr_Format(PyExc_ValueError, "DECIMAL size %d, expected %d", col->c, size), -1;
    }
    if ((col->kind == K_DATETIME2 || col->kind == K_TIMESTAMP2 || col->kind == K_TIME2) && col->a > 6)
        return PyErr_Format(PyExc_ValueError, "fsp %d", col->a), -1;
    col->row_start_trunc = truncates_at_row_start(col->kind, col->a);
    col->size = mk_fixed_size(col);
    PyObject *names = PyTuple_GET_ITEM(spec, 4);
    PyObject *codec = PyTuple_GET_ITEM(spec, 5);
    PyObject *table = PyTuple_GET_ITEM(spec, 6);
    PyObject *what = PyTuple_GET_ITEM(spec, 7);
    Py_ssize_t wlen;
    const char *wtext = PyUnicode_AsUTF8AndSize(what, &wlen);
    if (wtext == NULL)
        return -1;
    *what_off = blob_str(&plan->blob, wtext, (size_t)wlen);
    *codec_off = (size_t)-1;
    if (col->kind == K_TEXT && col->b == CS_CODEC) {
        Py_ssize_t clen;
        const char *ctext = PyUnicode_AsUTF8AndSize(codec, &clen);
        if (ctext == NULL)
            return -1;
        *codec_off = blob_str(&plan->blob, ctext, (size_t)clen);
    }
    if (col->kind == K_TEXT && col->b == CS_TABLE) {
        if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 256)
            return PyErr_SetString(PyExc_TypeError, "a byte table is a 256-tuple"), -1;
        col->table = PyMem_Malloc(256 * sizeof(int32_t));
        if (col->table == NULL)
            return mk_nomem();
        for (Py_ssize_t i = 0; i < 256; i++) {
            long cp = PyLong_AsLong(PyTuple_GET_ITEM(table, i));
            if (cp == -1 && PyErr_Occurred())
                return -1;
            if (cp < -1 || cp > 0xffff || (cp >= 0xd800 && cp <= 0xdfff))
                return PyErr_Format(PyExc_ValueError, "code point %ld in a byte table", cp), -1;
            col->table[i] = (int32_t)cp;
        }
    }
    *names_out = (col->kind == K_ENUM || col->kind == K_SET) && names != Py_None ? names : NULL;
    if (*names_out != NULL && !PyTuple_Check(names))
        return PyErr_SetString(PyExc_TypeError, "ENUM/SET names are a tuple of bytes"), -1;
    const char *key;
    Py_ssize_t klen;
    if (PyBytes_AsStringAndSize(json_key, (char **)&key, &klen))
        return -1;
    col->jkey_off = plan->blob.len;
    col->jkey_len = (size_t)klen;
    for (Py_ssize_t i = 0; i < klen; i++)
        plan->keys_nonascii |= ((unsigned char)key[i] & 0x80) != 0;
    if (ls_buf_put(&plan->blob, key, (size_t)klen))
        return mk_nomem();
    if (*what_off == (size_t)-1)
        return mk_nomem();
    return 0;
}

PyObject *mk_compile_plan(PyObject *self, PyObject *args)
{
    PyObject *specs, *order, *metadata, *json_keys;
    if (!PyArg_ParseTuple(args, "O!O!SO!:compile_plan", &PyList_Type, &specs, &PyList_Type, &order, &metadata,
                          &PyList_Type, &json_keys))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(specs);
    if (PyList_GET_SIZE(order) != m || PyList_GET_SIZE(json_keys) != m)
        return PyErr_Format(PyExc_ValueError, "%zd specs, %zd order entries, %zd keys", m, PyList_GET_SIZE(order),
                            PyList_GET_SIZE(json_keys));
    if (m > 0xffffff)
        return PyErr_Format(PyExc_ValueError, "%zd columns", m);
    mk_plan *plan = PyMem_Calloc(1, sizeof(mk_plan));
    if (plan == NULL)
        return PyErr_NoMemory();
    size_t *what_offs = PyMem_Calloc((size_t)m + 1, sizeof(size_t));
    size_t *codec_offs = PyMem_Calloc((size_t)m + 1, sizeof(size_t));
    plan->n = m;
    plan->cols = PyMem_Calloc((size_t)m + 1, sizeof(mk_col));
    plan->order = PyMem_Calloc((size_t)m + 1, sizeof(uint32_t));
    plan->null_bytes = ((size_t)m + 7) / 8;
    Py_INCREF(metadata);
    plan->metadata = metadata;
    if (what_offs == NULL || codec_offs == NULL || plan->cols == NULL || plan->order == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* Names: count first. */
    size_t total_names = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *spec = PyList_GET_ITEM(specs, j);
        if (PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 8 && PyTuple_Check(PyTuple_GET_ITEM(spec, 4)))
            total_names += (size_t)PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 4));
    }
    plan->name_off = PyMem_Calloc(total_names + 1, sizeof(size_t));
    plan->name_len = PyMem_Calloc(total_names + 1, sizeof(uint32_t));
    if (plan->name_off == NULL || plan->name_len == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    size_t name_at = 0;
    char *seen = PyMem_Calloc((size_t)m + 1, 1);
    if (seen == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *names = NULL;
        PyObject *key = PyList_GET_ITEM(json_keys, j);
        if (!PyBytes_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "JSON keys are bytes");
            PyMem_Free(seen);
            goto fail;
        }
        if (plan_column(plan, j, PyList_GET_ITEM(specs, j), key, &what_offs[j], &codec_offs[j], &names)) {
            PyMem_Free(seen);
            goto fail;
        }
        mk_col *col = &plan->cols[j];
        col->names_at = name_at;
        if (names != NULL) {
            Py_ssize_t k = PyTuple_GET_SIZE(names);
            col->nnames = (size_t)k;
            col->c = 1; /* names are known, even when there are none */
            for (Py_ssize_t i = 0; i < k; i++) {
                char *s;
                Py_ssize_t len;
                if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(names, i), &s, &len)) {
                    PyMem_Free(seen);
                    goto fail;
                }
                if ((uint64_t)len > UINT32_MAX) {
                    PyErr_SetString(PyExc_ValueError, "name too long");
                    PyMem_Free(seen);
                    goto fail;
                }
                plan->name_off[name_at] = plan->blob.len;
                plan->name_len[name_at] = (uint32_t)len;
                name_at++;
                if (ls_buf_put(&plan->blob, s, (size_t)len)) {
                    PyErr_NoMemory();
                    PyMem_Free(seen);
                    goto fail;
                }
            }
        } else if (col->kind == K_ENUM || col->kind == K_SET) {
            col->c = 0;
        }
        long o = PyLong_AsLong(PyList_GET_ITEM(order, j));
        if ((o == -1 && PyErr_Occurred()) || o < 0 || o >= m || seen[o]) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "order is not a permutation");
            PyMem_Free(seen);
            goto fail;
        }
        seen[o] = 1;
        plan->order[j] = (uint32_t)o;
    }
    PyMem_Free(seen);
    /* The blob no longer moves: resolve string pointers. */
    for (Py_ssize_t j = 0; j < m; j++) {
        plan->cols[j].what = (const char *)plan->blob.data + what_offs[j];
        if (codec_offs[j] != (size_t)-1)
            plan->cols[j].codec = (const char *)plan->blob.data + codec_offs[j];
    }
    PyMem_Free(what_offs);
    PyMem_Free(codec_offs);
    PyObject *capsule = PyCapsule_New(plan, PLAN_CAPSULE, plan_capsule_destructor);
    if (capsule == NULL)
        plan_free(plan);
    return capsule;
fail:
    PyMem_Free(what_offs);
    PyMem_Free(codec_offs);
    plan_free(plan);
    return NULL;
}

mk_plan *mk_get_plan(PyObject *capsule)
{
    return (mk_plan *)PyCapsule_GetPointer(capsule, PLAN_CAPSULE);
}
