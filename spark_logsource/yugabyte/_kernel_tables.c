/*
 * The writes view's tables in and batches out: the table schemas of the reader's SchemaCatalog (catalog.py, handed
 * over by fast.py as plain tuples whenever the catalog changes: column names by id, key column names, packed-row
 * layouts; docs/formats/yugabyte-wal.md "Packed rows") and the pair rows of a batch as Arrow buffers, which
 * fast.py wraps with pa.Array.from_buffers in the writes schema's column order (reader.py _WRITE_FIELDS).
 */
#include "_kernel.h"

/* ---- the catalog ---- */

static void schema_free(yb_schema *s)
{
    for (size_t k = 0; k < s->ncols; k++)
        free(s->cols[k].name);
    for (size_t k = 0; k < s->nhash + s->nrange; k++)
        free(s->keys[k].name);
    for (size_t k = 0; k < s->npacked; k++)
        free(s->packed[k].name);
    free(s->cols);
    free(s->keys);
    free(s->packed);
}

void yb_catalog_free(yb_catalog *cat)
{
    for (size_t k = 0; k < cat->n; k++)
        schema_free(&cat->items[k]);
    free(cat->items);
    cat->items = NULL;
    cat->n = 0;
    cat->current = -1;
}

static int copy_name(PyObject *s, yb_col *c)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL)
        return -1;
    if ((c->name = malloc((size_t)n + 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(c->name, u, (size_t)n + 1);
    c->len = (size_t)n;
    return 0;
}

/* A list of tuples into cols: "id name binary" (fmt "LUp"), "name" ("U") or "name binary size" ("Upi"). */
static int columns(PyObject *list, const char *fmt, yb_col **out, size_t *n)
{
    Py_ssize_t m = PyList_Check(list) ? PyList_GET_SIZE(list) : -1;
    if (m < 0) {
        PyErr_SetString(PyExc_TypeError, "expected a list of columns");
        return -1;
    }
    if ((*out = calloc((size_t)m + 1, sizeof(yb_col))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        yb_col *c = &(*out)[k];
        PyObject *item = PyList_GET_ITEM(list, k), *name = NULL;
        long long id = 0;
        int binary = 0, size = -1;
        int ok = fmt[0] == 'L' ? PyArg_ParseTuple(item, fmt, &id, &name, &binary)
                 : fmt[1] == 0 ? PyArg_Parse(item, fmt, &name) : PyArg_ParseTuple(item, fmt, &name, &binary, &size);
        if (!ok || copy_name(name, c))
            return -1;
        c->id = id;
        c->binary = binary;
        c->size = size;
        (*n)++;
    }
    return 0;
}

/* schemas: [(version or None, in_versions, [(id, name, binary)] sorted by id, [hash names], [range names],
 * [(name, binary, size or -1)]), ...]; current: the index of the catalog's current schema, or None. */
int yb_catalog_set(yb_catalog *cat, PyObject *schemas, PyObject *current)
{
    yb_catalog_free(cat);
    Py_ssize_t m = PyList_Check(schemas) ? PyList_GET_SIZE(schemas) : -1;
    if (m < 0) {
        PyErr_SetString(PyExc_TypeError, "expected a list of schemas");
        return -1;
    }
    if ((cat->items = calloc((size_t)m + 1, sizeof(yb_schema))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        yb_schema *s = &cat->items[k];
        PyObject *version, *cols, *hash, *range, *packed;
        cat->n++;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(schemas, k), "OpO!O!O!O!", &version, &s->in_versions, &PyList_Type,
                              &cols, &PyList_Type, &hash, &PyList_Type, &range, &PyList_Type, &packed))
            goto fail;
        if (version != Py_None) {
            s->version = PyLong_AsLongLong(version);
            if (s->version == -1 && PyErr_Occurred())
                goto fail;
            s->has_version = 1;
        }
        PyObject *keys = PySequence_Concat(hash, range);
        if (keys == NULL)
            goto fail;
        size_t nkeys = 0;
        int rc = columns(keys, "U", &s->keys, &nkeys);
        Py_DECREF(keys);
        /* set before the other columns: schema_free frees the key names by these counts */
        s->nhash = nkeys < (size_t)PyList_GET_SIZE(hash) ? nkeys : (size_t)PyList_GET_SIZE(hash);
        s->nrange = nkeys - s->nhash;
        if (rc || columns(cols, "LUp", &s->cols, &s->ncols) || columns(packed, "Upi", &s->packed, &s->npacked))
            goto fail;
        for (size_t j = 0; j < s->npacked; j++)
            s->nvarlen += s->packed[j].size < 0;
    }
    if (current != Py_None) {
        long c = PyLong_AsLong(current);
        if (c == -1 && PyErr_Occurred())
            goto fail;
        if (c < 0 || c >= m) {
            PyErr_SetString(PyExc_ValueError, "current schema out of range");
            goto fail;
        }
        cat->current = c;
    }
    return 0;
fail:
    yb_catalog_free(cat);
    return -1;
}

const yb_col *yb_column_by_id(const yb_schema *s, int64_t id)
{
    size_t lo = 0, hi = s->ncols;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->cols[mid].id < id)
            lo = mid + 1;
        else if (s->cols[mid].id > id)
            hi = mid;
        else
            return &s->cols[mid];
    }
    return NULL;
}

const yb_schema *yb_schema_of_version(const yb_catalog *cat, uint64_t version)
{
    for (size_t k = cat->n; k-- > 0;)
        if (cat->items[k].in_versions && cat->items[k].has_version && (uint64_t)cat->items[k].version == version)
            return &cat->items[k];
    return NULL;
}

/* ---- handing a batch out ---- */

/* A zeroed bytes object of n bytes (*data points into it). */
static PyObject *zeroed(size_t n, uint8_t **data)
{
    PyObject *o = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (o != NULL) {
        *data = (uint8_t *)PyBytes_AS_STRING(o);
        memset(*data, 0, n);
    }
    return o;
}

static inline void bit(uint8_t *bits, size_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }

enum { W_CTX, W_OFFSET, W_TERM, W_INDEX, W_HT, W_PHYS, W_PAIR, W_COLID, W_SV, W_WIDE,
       W_SUPERSEDED = W_WIDE, W_TOMB, V_ROW, V_TERM, V_INDEX, V_HT, V_PAIR, V_COLID, V_TOMB, V_SV, W_FIXED };
#define W_TEXTS 11

/* The rows [from, to) of r not dropped (n of them) as (n, fixed buffers..., (offsets, data, validity) per text
 * column): fast.py FastBuilder._writes_batch reads this order. */
PyObject *yb_take_writes(yb_rows *r, size_t from, size_t to, size_t n)
{
    static const size_t width[W_WIDE] = {4, 8, 8, 8, 8, 8, 4, 4, 8};
    static const int texts[W_TEXTS] = {YC_TXN, YC_COLNAME, YC_KIND, YC_ERROR, YC_KEYV, YC_KEYM, YC_VALUE, YC_META,
                                       YC_RAWK, YC_RAWV, YC_MESSAGE};
    static const uint32_t valid[W_TEXTS] = {YR_TXN, YR_COLNAME, YR_KIND, YR_ERROR, YR_KEY, YR_KEY, YR_VAL, YR_VAL,
                                            YR_PAIR, YR_PAIR, YR_CORRUPT};
    static const uint32_t nullable[] = {YR_TERM, YR_INDEX, YR_HT, YR_PAIR, YR_COLID, YR_TOMB, YR_SV};
    size_t nb = (n + 7) / 8;
    PyObject *fixed[W_FIXED] = {0}, *text[W_TEXTS][3] = {{0}}, *out = NULL;
    uint8_t *f[W_FIXED], *t[W_TEXTS][3];
    int ok = 1;
    for (int c = 0; c < W_FIXED && ok; c++)
        ok = (fixed[c] = zeroed(c < W_WIDE ? n * width[c] : nb, &f[c])) != NULL;
    for (int c = 0; c < W_TEXTS && ok; c++) {
        uint64_t total = 0;
        for (size_t j = from; j < to; j++)
            if (!(yb_row_at(r, j)->flags & YR_DROP))
                total += yb_end_at(r, texts[c], j) - yb_start_at(r, texts[c], j);
        if (total > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a batch's text column exceeds 2 GiB");
            ok = 0;
            break;
        }
        ok = (text[c][0] = zeroed((n + 1) * 4, &t[c][0])) != NULL && (text[c][1] = zeroed(total, &t[c][1])) != NULL
             && (text[c][2] = zeroed(nb, &t[c][2])) != NULL;
    }
    if (!ok)
        goto fail;
    int32_t pos[W_TEXTS] = {0};
    size_t i = 0;
    for (size_t j = from; j < to; j++) {
        const yb_row *p = yb_row_at(r, j);
        if (p->flags & YR_DROP)
            continue;
        int64_t phys = p->ht >> 12;
        memcpy(f[W_CTX] + 4 * i, &p->ctx, 4);
        memcpy(f[W_OFFSET] + 8 * i, &p->offset, 8);
        memcpy(f[W_TERM] + 8 * i, &p->term, 8);
        memcpy(f[W_INDEX] + 8 * i, &p->index, 8);
        memcpy(f[W_HT] + 8 * i, &p->ht, 8);
        memcpy(f[W_PHYS] + 8 * i, &phys, 8);
        memcpy(f[W_PAIR] + 4 * i, &p->pair_index, 4);
        memcpy(f[W_COLID] + 4 * i, &p->column_id, 4);
        memcpy(f[W_SV] + 8 * i, &p->schema_version, 8);
        if (!(p->flags & YR_CORRUPT)) {
            bit(f[V_ROW], i);
            if (p->flags & YR_SUPERSEDED)
                bit(f[W_SUPERSEDED], i);
        }
        if (p->flags & YR_TOMBV)
            bit(f[W_TOMB], i);
        for (int c = 0; c < 7; c++)
            if (p->flags & nullable[c])
                bit(f[V_TERM + c], i);
        for (int c = 0; c < W_TEXTS; c++) {
            uint64_t a = yb_start_at(r, texts[c], j), e = yb_end_at(r, texts[c], j);
            if (e > a) /* a column never written has no buffer: no memcpy from NULL */
                memcpy(t[c][1] + pos[c], r->data[texts[c]].data + a, e - a);
            pos[c] += (int32_t)(e - a);
            memcpy(t[c][0] + 4 * (i + 1), &pos[c], 4);
            if (p->flags & valid[c])
                bit(t[c][2], i);
        }
        i++;
    }
    if ((out = PyTuple_New(1 + W_FIXED + W_TEXTS)) == NULL)
        goto fail;
    PyObject *count = PyLong_FromSize_t(n);
    if (count == NULL)
        goto fail;
    PyTuple_SET_ITEM(out, 0, count);
    for (int c = 0; c < W_FIXED; c++) {
        PyTuple_SET_ITEM(out, 1 + c, fixed[c]);
        fixed[c] = NULL;
    }
    for (int c = 0; c < W_TEXTS; c++) {
        PyObject *triple = Py_BuildValue("(NNN)", text[c][0], text[c][1], text[c][2]);
        text[c][0] = text[c][1] = text[c][2] = NULL;
        if (triple == NULL)
            goto fail;
        PyTuple_SET_ITEM(out, 1 + W_FIXED + c, triple);
    }
    return out;
fail:
    Py_XDECREF(out);
    for (int c = 0; c < W_FIXED; c++)
        Py_XDECREF(fixed[c]);
    for (int c = 0; c < W_TEXTS; c++)
        for (int j = 0; j < 3; j++)
            Py_XDECREF(text[c][j]);
    return NULL;
}
