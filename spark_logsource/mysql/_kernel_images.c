/*
 * spark_logsource.mysql._kernel, row images: encode_rows(data, pos, plan, plan_after, op, as_json, data_base,
 * in_block, label) -> (n, first, second).
 *
 * The row images of one rows event (data[pos:] holds them back to back: mysql-server sql/rpl_record.cc
 * unpack_row; docs/formats/mysql-binlog.md "Rows events"): per image a NULL bitmap over the PRESENT columns, then
 * the values of the present non-NULL columns (_kernel_values.c). Each image becomes either compact JSON text (the
 * text spark_logsource.arrow.jsontext.to_json gives the row dict of rows.py) or a Spark Variant object (the bytes
 * spark_logsource.arrow.variant.encode_variant gives it; the metadata, which only depends on the image's key set, is
 * computed once per plan by encode_variant itself in encode/images.py). A side's images leave as Arrow column parts
 * (see side in _kernel.h).
 */
#include "_kernel.h"

/* ---- one image ---------------------------------------------------------------------------------------------- */

/* memcpy for the few bytes of one value or one key set: a call to the library's copy costs more than the copy. */
static inline void copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n > 16) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

/* Variant object of the current row, appended to o: values from x->vals/x->spans laid out in key order. */
static int assemble_object(mk_ctx *x, const mk_plan *plan, ls_buf *o)
{
    size_t m = (size_t)plan->n;
    const size_t *spans = (const size_t *)x->spans.data;
    uint64_t total = x->vals.len;
    int os = ls_size_of(total);
    int is = ls_size_of(m ? m - 1 : 0);
    if (os == 0)
        return PyErr_Format(PyExc_OverflowError, "row image of %llu bytes is too large for a variant",
                            (unsigned long long)total), MK_ERR;
    size_t head = ls_variant_head_size(m, is, os);
    size_t base = o->len;
    if (ls_buf_reserve(o, head + total))
        return mk_nomem();
    uint8_t *h = o->data + base;
    uint8_t *ids = ls_variant_head_at(h, m, is, os);
    uint8_t *offs = ids + m * (size_t)is;
    uint8_t *vals = h + head;
    size_t off = 0;
    for (size_t i = 0; i < m; i++) {
        ls_put_le(ids + i * (size_t)is, i, is);
        ls_put_le(offs + i * (size_t)os, off, os);
        uint32_t j = plan->order[i];
        size_t start = spans[2 * j], len = spans[2 * j + 1];
        copy_small(vals + off, x->vals.data + start, len);
        off += len;
    }
    ls_put_le(offs + m * (size_t)os, off, os);
    o->len = base + head + total;
    return MK_OK;
}

/* Decode one image at *pos and append its encoding to o. */
static int encode_image(mk_ctx *x, const mk_plan *plan, size_t *pos, size_t row_start, ls_buf *o)
{
    size_t p = *pos;
    Py_ssize_t m = plan->n;
    if (plan->null_bytes > x->end - p)
        return mk_trunc_value(x, p, "row NULL bitmap");
    const uint8_t *nulls = x->data + p;
    p += plan->null_bytes;
    if (x->json) {
        x->nonascii = plan->keys_nonascii;
        if (ls_buf_byte(o, '{'))
            return mk_nomem();
        for (Py_ssize_t j = 0; j < m; j++) {
            const mk_col *col = &plan->cols[j];
            if ((j && ls_buf_byte(o, ',')) || ls_buf_put(o, plan->blob.data + col->jkey_off, col->jkey_len))
                return mk_nomem();
            int rc = (nulls[j >> 3] >> (j & 7) & 1) ? mk_emit_null(x, o)
                                                    : mk_emit_value(x, o, plan, col, &p, row_start);
            if (rc)
                return rc;
        }
        if (ls_buf_byte(o, '}'))
            return mk_nomem();
        *pos = p;
        return MK_OK;
    }
    x->vals.len = 0;
    x->spans.len = 0;
    if (ls_buf_reserve(&x->spans, 2 * sizeof(size_t) * (size_t)m))
        return mk_nomem();
    size_t *spans = (size_t *)x->spans.data;
    for (Py_ssize_t j = 0; j < m; j++) {
        size_t start = x->vals.len;
        const mk_col *col = &plan->cols[j];
        int rc = (nulls[j >> 3] >> (j & 7) & 1) ? mk_emit_null(x, &x->vals)
                                                : mk_emit_value(x, &x->vals, plan, col, &p, row_start);
        if (rc)
            return rc;
        spans[2 * j] = start;
        spans[2 * j + 1] = x->vals.len - start;
    }
    *pos = p;
    return assemble_object(x, plan, o);
}

/* ---- one event ---------------------------------------------------------------------------------------------- */


void mk_side_clear(side *s)
{
    ls_buf_free(&s->ends);
    ls_buf_free(&s->data);
    ls_buf_free(&s->meta_ends);
    ls_buf_free(&s->meta);
}

/* The end offset of the image just written to data (int32: one Arrow binary/string column holds < 2 GiB). */
static int put_end(ls_buf *ends, const ls_buf *data)
{
    if (data->len > (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the row images of one rows event exceed 2 GiB");
        return -1;
    }
    int32_t end = (int32_t)data->len;
    return ls_buf_put(ends, &end, sizeof end) ? mk_nomem() : 0;
}

/* Decode and encode one image at *pos into the side: its bytes, its end offset, its metadata (Variant). */
static int side_image(mk_ctx *x, side *s, const mk_plan *plan, size_t *pos, size_t row_start)
{
    if (encode_image(x, plan, pos, row_start, &s->data) || put_end(&s->ends, &s->data))
        return -1;
    if (x->json)
        return 0;
    size_t meta_len = (size_t)PyBytes_GET_SIZE(plan->metadata);
    if (ls_buf_reserve(&s->meta, meta_len))
        return mk_nomem();
    copy_small(s->meta.data + s->meta.len, (const uint8_t *)PyBytes_AS_STRING(plan->metadata), meta_len);
    s->meta.len += meta_len;
    return put_end(&s->meta_ends, &s->meta);
}

PyObject *mk_buf_bytes(const ls_buf *b)
{
    return PyBytes_FromStringAndSize(b->len ? (const char *)b->data : "", (Py_ssize_t)b->len);
}

/* (ends, data, meta_ends, meta); the last two None for JSON. */
static PyObject *side_result(const side *s, int json)
{
    if (json)
        return Py_BuildValue("(NNOO)", mk_buf_bytes(&s->ends), mk_buf_bytes(&s->data), Py_None, Py_None);
    return Py_BuildValue("(NNNN)", mk_buf_bytes(&s->ends), mk_buf_bytes(&s->data), mk_buf_bytes(&s->meta_ends),
                         mk_buf_bytes(&s->meta));
}

/* (first, second) as side_result gives them, second None unless the op is an UPDATE; NULL on error. */
PyObject *mk_sides_result(const side *first, const side *second, int op, int json)
{
    PyObject *a = side_result(first, json);
    PyObject *b = a == NULL ? NULL : (op == OP_UPDATE ? side_result(second, json) : Py_NewRef(Py_None));
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

/* The decoding state of one event's row data: the buffer, and what its errors name. */
void mk_ctx_init(mk_ctx *x, const Py_buffer *view, long long data_base, int in_block, PyObject *label)
{
    x->data = view->buf;
    x->end = (size_t)view->len;
    x->data_base = data_base;
    x->in_block = in_block;
    x->label = label;
}

/* The decoding state's buffers, released. */
void mk_ctx_clear(mk_ctx *x)
{
    ls_buf_free(&x->vals);
    ls_buf_free(&x->spans);
    ls_buf_free(&x->tmp);
}

/* What an encode call owns, released. */
static void encode_clear(mk_ctx *x, side *first, side *second)
{
    mk_side_clear(first);
    mk_side_clear(second);
    mk_ctx_clear(x);
}

/* The rows of one event's row data from *pos to x->end, appended to the sides (x->nrows counts them). */
int mk_encode_event_rows(mk_ctx *x, side *first, side *second, const mk_plan *plan, const mk_plan *plan_after,
                         int op, size_t pos)
{
    while (pos < x->end) {
        size_t row_start = pos;
        if (side_image(x, first, plan, &pos, row_start))
            return -1;
        if (op == OP_UPDATE && side_image(x, second, plan_after, &pos, row_start))
            return -1;
        if (pos == row_start) { /* no column present: the row would repeat forever */
            return mk_raise_error(mk_CorruptDataError, x, row_start,
                                  PyUnicode_FromFormat("row %zd of %U: row image without columns", x->nrows,
                                                       x->label));
        }
        x->nrows++;
    }
    return 0;
}

PyObject *mk_encode_rows(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    PyObject *cap_before, *cap_after, *label;
    int op, as_json, in_block;
    long long data_base;
    if (!PyArg_ParseTuple(args, "y*nOOipLpU:encode_rows", &view, &start, &cap_before, &cap_after, &op, &as_json,
                          &data_base, &in_block, &label))
        return NULL;
    PyObject *result = NULL;
    mk_ctx x = {0};
    side first = {0}, second = {0};
    mk_plan *plan = mk_get_plan(cap_before);
    mk_plan *plan_after = plan ? mk_get_plan(cap_after) : NULL;
    if (plan == NULL || plan_after == NULL)
        goto done;
    if (op < OP_INSERT || op > OP_DELETE || start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "bad op or start position");
        goto done;
    }
    mk_ctx_init(&x, &view, data_base, in_block, label);
    x.json = as_json;
    if (mk_encode_event_rows(&x, &first, &second, plan, plan_after, op, (size_t)start))
        goto done;
    {
        PyObject *sides = mk_sides_result(&first, &second, op, as_json);
        if (sides != NULL) {
            result = Py_BuildValue("(nOO)", x.nrows, PyTuple_GET_ITEM(sides, 0), PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    encode_clear(&x, &first, &second);
    PyBuffer_Release(&view);
    return result;
}
