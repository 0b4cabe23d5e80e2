/*
 * spark_logsource.yugabyte._kernel: the operations view of YugabyteDB WAL segments at C speed.
 *
 * A Builder holds a read's rows, as reader.py's _Builder and _TabletReader do together: the entries decoded here
 * from a run of entry batches (Builder.decode: docs/formats/yugabyte-wal.md "Segment layout", the 12-byte entry
 * headers and their CRC-32C), the rows the Python reference decoded (add_entry, add_corrupt: the batches the kernel
 * declines), the superseded queue ("Raft semantics the rows expose"), and the cut into record batches of at most
 * batchSize rows and the byte cap (take: arrow/batching.py's rule, row by row). take hands each batch over as Arrow
 * buffers, which reader.py wraps with pa.Array.from_buffers.
 *
 * Builder.decode stops, keeping nothing of it, at the first entry batch it does not take whole: a framing problem
 * (a header all zeros or failing its CRC, a length 0 or running past the data, a body failing its CRC), or a body
 * the proto part declines (_kernel.h). The reader's EntryScanner then takes that one step, with the reference's
 * errors and resynchronisation, and calls decode again after it.
 */
#include "_kernel.h"

#include "../_native/_buf.h"

/* ---- rows ---- */

#define nrows yb_nrows
#define row_at yb_row_at
#define end_at yb_end_at
#define start_at yb_start_at

int yb_row_value(yb_rows *r, int column, const uint8_t *s, size_t n)
{
    if (ls_buf_put(&r->data[column], s, n))
        return YB_NOMEM;
    uint64_t end = r->data[column].len;
    return ls_buf_put(&r->ends[column], &end, sizeof end) ? YB_NOMEM : YB_OK;
}

int yb_row_null(yb_rows *r, int column) { return yb_row_value(r, column, NULL, 0); }

typedef struct {
    size_t rows, data[YC_COUNT], ends[YC_COUNT];
} yb_mark;

static void mark(const yb_rows *r, yb_mark *m)
{
    m->rows = r->rows.len;
    for (int c = 0; c < r->ncols; c++) {
        m->data[c] = r->data[c].len;
        m->ends[c] = r->ends[c].len;
    }
}

static void truncate_to(yb_rows *r, const yb_mark *m)
{
    r->rows.len = m->rows;
    for (int c = 0; c < r->ncols; c++) {
        r->data[c].len = m->data[c];
        r->ends[c].len = m->ends[c];
    }
}

/* ---- the Builder ---- */

typedef struct {
    PyObject_HEAD
    yb_rows r;
    ls_buf head_sizes; /* uint64 per context: the bytes of its file, table id and tablet id */
    size_t head;       /* first row still pending (its superseded flag not known yet) */
    size_t taken;      /* first released row not yet handed out */
    /* released rows not dropped nor handed out, and their bytes (whether a batch is due, without a walk) */
    unsigned long long held_rows, held_bytes;
    int include_superseded, count_message, writes;
    long long max_pending;
    long long pend; /* entries (not rows) settled and not yet released: reader.py's len(pending) */
    yb_catalog cat; /* the writes view's schemas and index range */
} Builder;

static void Builder_dealloc(Builder *self)
{
    ls_buf_free(&self->r.rows);
    for (int c = 0; c < YC_COUNT; c++) {
        ls_buf_free(&self->r.data[c]);
        ls_buf_free(&self->r.ends[c]);
    }
    ls_buf_free(&self->head_sizes);
    yb_catalog_free(&self->cat);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Builder_init(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"include_superseded", "max_pending", "count_message", "writes", "low", "high", NULL};
    PyObject *low = Py_None, *high = Py_None;
    self->writes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "pLp|pOO", names, &self->include_superseded, &self->max_pending,
                                     &self->count_message, &self->writes, &low, &high))
        return -1;
    self->r.ncols = self->writes ? YC_COUNT : YC_OPS;
    self->cat.current = -1;
    if (low != Py_None && ((self->cat.low = PyLong_AsLongLong(low)) != -1 || !PyErr_Occurred()))
        self->cat.has_low = 1;
    if (PyErr_Occurred()) /* no further C API call with an exception set */
        return -1;
    if (high != Py_None && ((self->cat.high = PyLong_AsLongLong(high)) != -1 || !PyErr_Occurred()))
        self->cat.has_high = 1;
    return PyErr_Occurred() ? -1 : 0;
}

/* reader.py _supersede_from: every pending entry of an index at least `index` is superseded. */
static void supersede_from(Builder *self, size_t upto, int64_t index)
{
    for (size_t k = self->head; k < upto; k++) {
        yb_row *p = row_at(&self->r, k);
        if ((p->flags & (YR_CORRUPT | YR_SUPERSEDED)) == 0 && (p->flags & YR_INDEX) && p->index >= index)
            p->flags |= YR_SUPERSEDED;
    }
}

/* reader.py _release: pending rows from the head are final while superseded, without an index, committed, or
 * beyond MAX_PENDING; a superseded one is dropped unless asked for. */
static void release(Builder *self, size_t upto, int has_committed, int64_t committed, int everything)
{
    while (self->head < upto) {
        yb_row *p = row_at(&self->r, self->head);
        int final = everything || (p->flags & (YR_SUPERSEDED | YR_CORRUPT)) || !(p->flags & YR_INDEX)
                    || (has_committed && p->index <= committed) || self->pend > self->max_pending;
        if (!final)
            return;
        if ((p->flags & YR_HIDDEN) || ((p->flags & YR_SUPERSEDED) && !self->include_superseded)) {
            p->flags |= YR_DROP;
        } else {
            self->held_rows++;
            self->held_bytes += p->size + ((const uint64_t *)self->head_sizes.data)[p->ctx];
        }
        if (!self->writes || (p->flags & YR_LAST))
            self->pend--;
        self->head++;
    }
}

/* reader.py _add for the entry whose rows are [first, last]: supersede, append (it is there already), release. */
static void settle_entry(Builder *self, size_t first, size_t last, int has_committed, int64_t committed)
{
    yb_row *e = row_at(&self->r, first);
    if (e->flags & YR_INDEX)
        supersede_from(self, first, e->index);
    self->pend++;
    release(self, last + 1, has_committed, committed, 0);
}

static int64_t entry_committed(const yb_row *e, const yb_batch_info *info, int *has)
{
    /* messages.py: the entry's committed_op_id, raised to the batch's when the batch has one */
    int64_t c = (e->flags & YR_CINDEX) ? e->cindex : 0;
    *has = (e->flags & YR_CINDEX) || info->has_committed;
    if (info->has_committed && info->committed > c)
        c = info->committed;
    return c;
}

static PyObject *Builder_add_context(Builder *self, PyObject *arg)
{
    unsigned long long size = PyLong_AsUnsignedLongLong(arg);
    if (size == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    uint64_t s = size;
    if (ls_buf_put(&self->head_sizes, &s, sizeof s))
        return PyErr_NoMemory();
    return PyLong_FromSize_t(self->head_sizes.len / sizeof s - 1);
}

static int check_ctx(Builder *self, long ctx)
{
    if (ctx < 0 || (size_t)ctx >= self->head_sizes.len / sizeof(uint64_t)) {
        PyErr_SetString(PyExc_ValueError, "unknown context");
        return -1;
    }
    return 0;
}

/* decode(data, base, ctx, verify) -> (stop, entries, low, high): the entry batches of data (the segment's bytes
 * from offset base) up to the first one the kernel does not take; low/high: the entries' index range or None. */
static PyObject *Builder_decode(Builder *self, PyObject *args)
{
    Py_buffer view;
    long long base;
    long ctx;
    int verify;
    if (!yb_specs_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "set_specs was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*Llp", &view, &base, &ctx, &verify))
        return NULL;
    if (check_ctx(self, ctx)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *data = view.buf;
    size_t n = (size_t)view.len, pos = 0;
    long long entries = 0;
    int64_t low = 0, high = 0;
    int have = 0, rc = YB_OK;
    while (n - pos >= YB_ENTRY_HEADER) {
        const uint8_t *h = data + pos;
        uint32_t length, body_crc, header_crc;
        memcpy(&length, h, 4);
        memcpy(&body_crc, h + 4, 4);
        memcpy(&header_crc, h + 8, 4);
        if (yb_crc32c(h, 8) != header_crc || length == 0 || length > YB_MAX_BATCH
            || length > n - pos - YB_ENTRY_HEADER)
            break; /* (an all-zero header fails its CRC) */
        const uint8_t *body = h + YB_ENTRY_HEADER;
        if (verify && yb_crc32c(body, length) != body_crc)
            break;
        yb_mark m;
        mark(&self->r, &m);
        size_t first = nrows(&self->r);
        yb_batch_info info;
        rc = yb_decode_batch(body, length, base + (long long)pos, (int32_t)ctx, &self->r, &info,
                             self->writes ? &self->cat : NULL);
        if (rc) {
            truncate_to(&self->r, &m);
            break;
        }
        for (size_t k = first, a = first; k < nrows(&self->r); k++) {
            if (self->writes && !(row_at(&self->r, k)->flags & YR_LAST))
                continue; /* an entry's rows end at its LAST one */
            yb_row *e = row_at(&self->r, a);
            if (e->flags & YR_INDEX) {
                low = have && low < e->index ? low : e->index;
                high = have && high > e->index ? high : e->index;
                have = 1;
            }
            int has;
            int64_t c = entry_committed(e, &info, &has);
            settle_entry(self, a, k, has, c);
            entries++;
            a = k + 1;
        }
        pos += YB_ENTRY_HEADER + length;
    }
    PyBuffer_Release(&view);
    if (rc == YB_NOMEM)
        return PyErr_NoMemory();
    if (!have)
        return Py_BuildValue("(LLOO)", base + (long long)pos, entries, Py_None, Py_None);
    return Py_BuildValue("(LLLL)", base + (long long)pos, entries, (long long)low, (long long)high);
}

static int opt_i64(PyObject *o, int64_t *out, uint32_t flag, uint32_t *flags)
{
    if (o == Py_None)
        return 0;
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    *flags |= flag;
    return 0;
}

static int opt_text(yb_rows *r, int column, PyObject *o, uint32_t flag, uint32_t *flags)
{
    if (o == Py_None)
        return yb_row_null(r, column) ? (PyErr_NoMemory(), -1) : 0;
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_Check(o)) {
        s = PyUnicode_AsUTF8AndSize(o, &n);
    } else if (PyBytes_Check(o)) {
        s = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
    } else {
        PyErr_SetString(PyExc_TypeError, "expected str, bytes or None");
        return -1;
    }
    if (s == NULL)
        return -1;
    *flags |= flag;
    return yb_row_value(r, column, (const uint8_t *)s, (size_t)n) ? (PyErr_NoMemory(), -1) : 0;
}

static uint64_t new_row_size(yb_rows *r, size_t k)
{
    uint64_t size = 0;
    for (int c = 0; c < r->ncols; c++)
        size += end_at(r, c, k) - start_at(r, c, k);
    return size;
}

/* add_entry(ctx, offset, entry_in_batch, term, index, hybrid_time, op_type, committed_term, committed_index,
 * transaction_id, transaction_status, details_value, details_metadata, committed): an entry the reference decoded,
 * with `committed` the index that releases pending rows after it (None: none). */
static PyObject *Builder_add_entry(Builder *self, PyObject *args)
{
    long ctx;
    long long offset;
    int entry;
    PyObject *term, *index, *ht, *op, *cterm, *cindex, *txn, *status, *value, *meta, *committed;
    if (!PyArg_ParseTuple(args, "lLiOOOOOOOOOOO", &ctx, &offset, &entry, &term, &index, &ht, &op, &cterm, &cindex,
                          &txn, &status, &value, &meta, &committed))
        return NULL;
    if (check_ctx(self, ctx))
        return NULL;
    if (self->writes) {
        PyErr_SetString(PyExc_ValueError, "add_entry on a writes Builder");
        return NULL;
    }
    yb_mark m;
    mark(&self->r, &m);
    yb_row row = {0};
    row.offset = offset;
    row.ctx = (int32_t)ctx;
    row.entry_in_batch = entry;
    int64_t c = 0;
    uint32_t has_c = 0;
    if (opt_i64(term, &row.term, YR_TERM, &row.flags) || opt_i64(index, &row.index, YR_INDEX, &row.flags)
        || opt_i64(cterm, &row.cterm, YR_CTERM, &row.flags) || opt_i64(cindex, &row.cindex, YR_CINDEX, &row.flags)
        || opt_i64(committed, &c, 1, &has_c))
        goto fail;
    if (ht != Py_None) {
        /* reader.py _split_ht: a hybrid time above int64 is no hybrid time */
        unsigned long long v = PyLong_AsUnsignedLongLong(ht);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            goto fail;
        if (v <= (unsigned long long)INT64_MAX) {
            row.ht = (int64_t)v;
            row.flags |= YR_HT;
        }
    }
    uint32_t unused = 0;
    if (opt_text(&self->r, YC_OPTYPE, op, YR_OPTYPE, &row.flags) || opt_text(&self->r, YC_TXN, txn, YR_TXN, &row.flags)
        || opt_text(&self->r, YC_STATUS, status, YR_STATUS, &row.flags)
        || opt_text(&self->r, YC_VALUE, value, 0, &unused) || opt_text(&self->r, YC_META, meta, 0, &unused)
        || opt_text(&self->r, YC_MESSAGE, Py_None, 0, &unused))
        goto fail;
    size_t k = nrows(&self->r);
    row.size = new_row_size(&self->r, k);
    if (ls_buf_put(&self->r.rows, &row, sizeof row)) {
        PyErr_NoMemory();
        goto fail;
    }
    settle_entry(self, k, k, (int)has_c, c);
    Py_RETURN_NONE;
fail:
    truncate_to(&self->r, &m);
    return NULL;
}

/* add_corrupt(ctx, offset, message): a corrupt-record row (reader.py _report's keep). */
static PyObject *Builder_add_corrupt(Builder *self, PyObject *args)
{
    long ctx;
    long long offset;
    PyObject *message;
    if (!PyArg_ParseTuple(args, "lLU", &ctx, &offset, &message))
        return NULL;
    if (check_ctx(self, ctx))
        return NULL;
    yb_mark m;
    mark(&self->r, &m);
    yb_row row = {0};
    row.offset = offset;
    row.ctx = (int32_t)ctx;
    row.flags = YR_CORRUPT | YR_LAST;
    uint32_t unused = 0;
    for (int c = 0; c < self->r.ncols; c++)
        if (c != YC_MESSAGE && yb_row_null(&self->r, c)) {
            PyErr_NoMemory();
            goto fail;
        }
    if (opt_text(&self->r, YC_MESSAGE, message, 0, &unused))
        goto fail;
    size_t k = nrows(&self->r);
    row.size = self->count_message ? new_row_size(&self->r, k) : 0;
    if (ls_buf_put(&self->r.rows, &row, sizeof row)) {
        PyErr_NoMemory();
        goto fail;
    }
    self->pend++;
    release(self, k + 1, 0, 0, 0);
    Py_RETURN_NONE;
fail:
    truncate_to(&self->r, &m);
    return NULL;
}

/* add_writes(ctx, offset, term, index, hybrid_time, transaction_id, committed, rows): an entry the reference decoded
 * in the writes view (reader.py _add and add_entry), each row (pair_index, column_id, column_name, kind,
 * is_tombstone, schema_version, decode_error, doc_key value, doc_key metadata, value, value metadata, raw_key,
 * raw_value) with None where the reference has None; no rows: the entry only takes its place in the queue. */
static PyObject *Builder_add_writes(Builder *self, PyObject *args)
{
    long ctx;
    long long offset;
    PyObject *term, *index, *ht, *txn, *committed, *rows;
    if (!PyArg_ParseTuple(args, "lLOOOOOO!", &ctx, &offset, &term, &index, &ht, &txn, &committed, &PyList_Type, &rows))
        return NULL;
    if (check_ctx(self, ctx))
        return NULL;
    if (!self->writes) {
        PyErr_SetString(PyExc_ValueError, "add_writes on an operations Builder");
        return NULL;
    }
    yb_mark m;
    mark(&self->r, &m);
    yb_row tmpl = {0};
    tmpl.offset = offset;
    tmpl.ctx = (int32_t)ctx;
    int64_t c = 0;
    uint32_t has_c = 0, unused = 0;
    if (opt_i64(term, &tmpl.term, YR_TERM, &tmpl.flags) || opt_i64(index, &tmpl.index, YR_INDEX, &tmpl.flags)
        || opt_i64(committed, &c, 1, &has_c) || opt_i64(ht, &tmpl.ht, YR_HT, &tmpl.flags))
        goto fail;
    size_t first = nrows(&self->r);
    Py_ssize_t n = PyList_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < (n ? n : 1); i++) {
        yb_row row = tmpl;
        yb_rows *r = &self->r;
        if (n == 0) {
            row.flags |= YR_HIDDEN;
            for (int col = 0; col < r->ncols; col++)
                if (yb_row_null(r, col)) {
                    PyErr_NoMemory();
                    goto fail;
                }
        } else {
            PyObject *pair, *colid, *name, *kind, *tomb, *sv, *error, *kv, *km, *vv, *vm, *rk, *rv;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(rows, i), "OOOOOOOOOOOOO", &pair, &colid, &name, &kind, &tomb, &sv,
                                  &error, &kv, &km, &vv, &vm, &rk, &rv))
                goto fail;
            int64_t v64 = 0, c64 = 0;
            uint32_t flag = 0;
            if (opt_i64(pair, &v64, YR_PAIR, &row.flags) || opt_i64(colid, &c64, YR_COLID, &row.flags))
                goto fail;
            if (v64 < INT32_MIN || v64 > INT32_MAX || c64 < INT32_MIN || c64 > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "pair_index or column_id outside int32");
                goto fail;
            }
            row.pair_index = (int32_t)v64;
            row.column_id = (int32_t)c64;
            if (opt_i64(sv, &row.schema_version, YR_SV, &row.flags) || opt_i64(tomb, &v64, YR_TOMB, &flag))
                goto fail;
            row.flags |= flag | (flag && v64 ? YR_TOMBV : 0);
            if (opt_text(r, YC_OPTYPE, Py_None, 0, &unused) || opt_text(r, YC_TXN, txn, YR_TXN, &row.flags)
                || opt_text(r, YC_STATUS, Py_None, 0, &unused) || opt_text(r, YC_VALUE, vv, YR_VAL, &row.flags)
                || opt_text(r, YC_META, vm, 0, &unused) || opt_text(r, YC_MESSAGE, Py_None, 0, &unused)
                || opt_text(r, YC_COLNAME, name, YR_COLNAME, &row.flags) || opt_text(r, YC_KIND, kind, YR_KIND, &row.flags)
                || opt_text(r, YC_ERROR, error, YR_ERROR, &row.flags) || opt_text(r, YC_KEYV, kv, YR_KEY, &row.flags)
                || opt_text(r, YC_KEYM, km, 0, &unused) || opt_text(r, YC_RAWK, rk, 0, &unused)
                || opt_text(r, YC_RAWV, rv, 0, &unused))
                goto fail;
            row.size = new_row_size(r, nrows(r));
        }
        if (i == (n ? n : 1) - 1)
            row.flags |= YR_LAST;
        if (ls_buf_put(&r->rows, &row, sizeof row)) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    settle_entry(self, first, nrows(&self->r) - 1, (int)has_c, c);
    Py_RETURN_NONE;
fail:
    truncate_to(&self->r, &m);
    return NULL;
}

/* set_catalog(schemas, current): the writes view's schemas (fast.py FastBuilder.sync, _kernel_tables.c). */
static PyObject *Builder_set_catalog(Builder *self, PyObject *args)
{
    PyObject *schemas, *current;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &schemas, &current))
        return NULL;
    int has_low = self->cat.has_low, has_high = self->cat.has_high;
    int64_t low = self->cat.low, high = self->cat.high;
    int rc = yb_catalog_set(&self->cat, schemas, current);
    self->cat.has_low = has_low;
    self->cat.has_high = has_high;
    self->cat.low = low;
    self->cat.high = high;
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Builder_supersede_from(Builder *self, PyObject *arg)
{
    long long index = PyLong_AsLongLong(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    supersede_from(self, nrows(&self->r), index);
    Py_RETURN_NONE;
}

static PyObject *Builder_release_all(Builder *self, PyObject *unused)
{
    release(self, nrows(&self->r), 0, 0, 1);
    Py_RETURN_NONE;
}

static PyObject *Builder_pending(Builder *self, PyObject *unused)
{
    return PyLong_FromSize_t(nrows(&self->r) - self->taken);
}

/* ---- handing batches out ---- */

/* A zeroed bytes object of n bytes (*data points into it). */
static PyObject *out_bytes(size_t n, uint8_t **data)
{
    PyObject *o = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (o != NULL) {
        *data = (uint8_t *)PyBytes_AS_STRING(o);
        memset(*data, 0, n);
    }
    return o;
}

/* Drop the rows before `taken` (handed out): the rest move to the front. */
static void compact(Builder *self)
{
    yb_rows *r = &self->r;
    size_t t = self->taken, n = nrows(r);
    if (t == 0)
        return;
    for (int c = 0; c < r->ncols; c++) {
        uint64_t base = start_at(r, c, t), *ends = (uint64_t *)r->ends[c].data;
        memmove(r->data[c].data, r->data[c].data + base, r->data[c].len - base);
        r->data[c].len -= base;
        for (size_t k = t; k < n; k++)
            ends[k - t] = ends[k] - base;
        r->ends[c].len = (n - t) * sizeof(uint64_t);
    }
    memmove(r->rows.data, r->rows.data + t * sizeof(yb_row), (n - t) * sizeof(yb_row));
    r->rows.len = (n - t) * sizeof(yb_row);
    self->head -= t;
    self->taken = 0;
}

enum { O_CTX, O_OFFSET, O_ENTRY, O_TERM, O_INDEX, O_HT, O_PHYS, O_LOGICAL, O_CTERM, O_CINDEX, O_SUPERSEDED,
       V_ENTRY, V_TERM, V_INDEX, V_HT, V_CTERM, V_CINDEX, O_FIXED };

static inline void set_bit(uint8_t *bits, size_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* take(batch_size, max_bytes, final) -> None, or (n, fixed buffers..., (offsets, data, validity) per text column):
 * the next batch of released rows, when it is due (full by rows or bytes, closed by a row that does not fit, or
 * `final`). Column order: reader.py _FastBuilder._batch. */
static PyObject *Builder_take(Builder *self, PyObject *args)
{
    long long batch_size, max_bytes;
    int final;
    if (!PyArg_ParseTuple(args, "LLp", &batch_size, &max_bytes, &final))
        return NULL;
    if (batch_size < 1 || max_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "batch_size and max_bytes must be positive");
        return NULL;
    }
    /* arrow/batching.py: nothing is due while the held rows fit one batch with room left */
    if (!final && self->held_rows < (unsigned long long)batch_size && self->held_bytes < (unsigned long long)max_bytes)
        Py_RETURN_NONE;
    yb_rows *r = &self->r;
    const uint64_t *hs = (const uint64_t *)self->head_sizes.data;
    size_t k = self->taken;
    unsigned long long rows = 0, bytes = 0;
    int closed = 0;
    while (k < self->head) {
        const yb_row *p = row_at(r, k);
        if (p->flags & YR_DROP) {
            k++;
            continue;
        }
        uint64_t s = p->size + hs[p->ctx];
        if (rows > 0 && (rows + 1 > (unsigned long long)batch_size || bytes + s > (unsigned long long)max_bytes)) {
            closed = 1;
            break;
        }
        rows++;
        bytes += s;
        k++;
    }
    if (rows == 0) {
        self->taken = k; /* dropped rows only */
        compact(self);
        Py_RETURN_NONE;
    }
    if (!(final || closed || rows >= (unsigned long long)batch_size || bytes >= (unsigned long long)max_bytes))
        Py_RETURN_NONE;
    if (self->writes) {
        PyObject *out = yb_take_writes(r, self->taken, k, (size_t)rows);
        if (out != NULL) {
            self->taken = k;
            self->held_rows -= rows;
            self->held_bytes -= bytes;
            compact(self);
        }
        return out;
    }
    size_t n = (size_t)rows, nb = (n + 7) / 8;
    static const int text_cols[] = {YC_OPTYPE, YC_TXN, YC_STATUS, YC_MESSAGE, YC_VALUE, YC_META};
    PyObject *fixed[O_FIXED] = {0}, *texts[6][3] = {{0}};
    uint8_t *f[O_FIXED], *t[6][3];
    static const size_t width[O_FIXED] = {4, 8, 4, 8, 8, 8, 8, 8, 8, 8};
    int ok = 1;
    for (int c = 0; c < O_FIXED && ok; c++)
        ok = (fixed[c] = out_bytes(c < O_SUPERSEDED ? n * width[c] : nb, &f[c])) != NULL;
    for (int c = 0; c < 6 && ok; c++) {
        uint64_t total = 0;
        for (size_t j = self->taken; j < k; j++)
            if (!(row_at(r, j)->flags & YR_DROP))
                total += end_at(r, text_cols[c], j) - start_at(r, text_cols[c], j);
        if (total > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a batch's text column exceeds 2 GiB");
            ok = 0;
            break;
        }
        ok = (texts[c][0] = out_bytes((n + 1) * 4, &t[c][0])) != NULL
             && (texts[c][1] = out_bytes(total, &t[c][1])) != NULL && (texts[c][2] = out_bytes(nb, &t[c][2])) != NULL;
    }
    if (!ok)
        goto fail;
    size_t i = 0;
    int32_t pos[6] = {0};
    for (size_t j = self->taken; j < k; j++) {
        const yb_row *p = row_at(r, j);
        if (p->flags & YR_DROP)
            continue;
        int32_t ctx = p->ctx, entry = p->entry_in_batch;
        int64_t phys = p->ht >> 12, logical = p->ht & 0xFFF;
        memcpy(f[O_CTX] + 4 * i, &ctx, 4);
        memcpy(f[O_OFFSET] + 8 * i, &p->offset, 8);
        memcpy(f[O_ENTRY] + 4 * i, &entry, 4);
        memcpy(f[O_TERM] + 8 * i, &p->term, 8);
        memcpy(f[O_INDEX] + 8 * i, &p->index, 8);
        memcpy(f[O_HT] + 8 * i, &p->ht, 8);
        memcpy(f[O_PHYS] + 8 * i, &phys, 8);
        memcpy(f[O_LOGICAL] + 8 * i, &logical, 8);
        memcpy(f[O_CTERM] + 8 * i, &p->cterm, 8);
        memcpy(f[O_CINDEX] + 8 * i, &p->cindex, 8);
        if (!(p->flags & YR_CORRUPT)) {
            set_bit(f[V_ENTRY], i);
            if (p->flags & YR_SUPERSEDED)
                set_bit(f[O_SUPERSEDED], i);
        }
        static const uint32_t nullable[] = {YR_TERM, YR_INDEX, YR_HT, YR_CTERM, YR_CINDEX};
        for (int c = 0; c < 5; c++)
            if (p->flags & nullable[c])
                set_bit(f[V_TERM + c], i);
        const uint32_t text_flags[6] = {YR_OPTYPE, YR_TXN, YR_STATUS, YR_CORRUPT, 0, 0};
        for (int c = 0; c < 6; c++) {
            uint64_t a = start_at(r, text_cols[c], j), b = end_at(r, text_cols[c], j);
            memcpy(t[c][1] + pos[c], r->data[text_cols[c]].data + a, b - a);
            pos[c] += (int32_t)(b - a);
            memcpy(t[c][0] + 4 * (i + 1), &pos[c], 4);
            if (c >= 4 ? !(p->flags & YR_CORRUPT) : (p->flags & text_flags[c]) != 0)
                set_bit(t[c][2], i);
        }
        i++;
    }
    self->taken = k;
    self->held_rows -= rows;
    self->held_bytes -= bytes;
    compact(self);
    PyObject *out = PyTuple_New(1 + O_FIXED + 6);
    if (out == NULL)
        goto fail;
    PyTuple_SET_ITEM(out, 0, PyLong_FromSize_t(n));
    for (int c = 0; c < O_FIXED; c++)
        PyTuple_SET_ITEM(out, 1 + c, fixed[c]);
    for (int c = 0; c < 6; c++) {
        PyObject *triple = Py_BuildValue("(NNN)", texts[c][0], texts[c][1], texts[c][2]);
        if (triple == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, 1 + O_FIXED + c, triple);
    }
    if (PyTuple_GET_ITEM(out, 0) == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
fail:
    for (int c = 0; c < O_FIXED; c++)
        Py_XDECREF(fixed[c]);
    for (int c = 0; c < 6; c++)
        for (int j = 0; j < 3; j++)
            Py_XDECREF(texts[c][j]);
    return NULL;
}

static PyMethodDef Builder_methods[] = {
    {"add_context", (PyCFunction)Builder_add_context, METH_O, "add_context(head_bytes) -> context number"},
    {"decode", (PyCFunction)Builder_decode, METH_VARARGS, "decode(data, base, ctx, verify) -> (stop, n, low, high)"},
    {"add_entry", (PyCFunction)Builder_add_entry, METH_VARARGS, "add an entry the reference decoded"},
    {"add_corrupt", (PyCFunction)Builder_add_corrupt, METH_VARARGS, "add_corrupt(ctx, offset, message)"},
    {"add_writes", (PyCFunction)Builder_add_writes, METH_VARARGS, "add an entry's write rows the reference decoded"},
    {"set_catalog", (PyCFunction)Builder_set_catalog, METH_VARARGS, "set_catalog(schemas, current)"},
    {"supersede_from", (PyCFunction)Builder_supersede_from, METH_O, "mark pending entries of index >= it"},
    {"release_all", (PyCFunction)Builder_release_all, METH_NOARGS, "release every pending row"},
    {"pending", (PyCFunction)Builder_pending, METH_NOARGS, "rows held (pending or not handed out)"},
    {"take", (PyCFunction)Builder_take, METH_VARARGS, "take(batch_size, max_bytes, final) -> buffers or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spark_logsource.yugabyte._kernel.Builder",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_methods = Builder_methods,
    .tp_doc = "The rows of one read of the operations view (see the module's source).",
};

static PyObject *set_specs(PyObject *module, PyObject *args)
{
    PyObject *specs, *enums;
    long replicate, write_batch;
    if (!PyArg_ParseTuple(args, "O!O!ll", &PyList_Type, &specs, &PyList_Type, &enums, &replicate, &write_batch))
        return NULL;
    if (yb_set_specs(specs, enums, replicate, write_batch))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *crc32c(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE))
        return NULL;
    uint32_t c = yb_crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef module_methods[] = {
    {"set_specs", set_specs, METH_VARARGS, "set_specs(specs, enums, replicate, write_batch): messages.py's specs"},
    {"crc32c", crc32c, METH_O, "CRC-32C of a buffer (as the crc32c package computes it)"},
    {NULL, NULL, 0, NULL},
};

static void module_free(void *unused)
{
    yb_proto_free();
    yb_writes_free();
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_kernel", "YugabyteDB WAL operations view kernel.", -1, module_methods,
    NULL, NULL, NULL, module_free,
};

__attribute__((visibility("default"))) PyMODINIT_FUNC PyInit__kernel(void)
{
    yb_crc32c_init();
    if (PyType_Ready(&BuilderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&BuilderType);
    if (PyModule_AddObject(m, "Builder", (PyObject *)&BuilderType) < 0) {
        Py_DECREF(&BuilderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
