/*
 * spark_logsource.mysql._kernel, typed rows: view=table's typed columns (_typed.h has the conversions).
 *
 *     compile_typed(convs) -> typed (a capsule)
 *     typed_rows(data, pos, plan, plan_after, typed, typed_after, op, data_base, in_block, label)
 *         -> (n, first, second) or None
 *     json_variant(text) / json_variants(texts): a JSON column's Variant (../_native/_json_variant.h)
 *
 * Each value is decoded by the same decoder as the changes view (_kernel_values.c mk_emit_value) and converted to
 * one cell of its column; a value that does not convert sends the whole event to the Python path (None).
 */
#include "_kernel.h"

#include "_typed.h"

static const char TYPED_CAPSULE[] = "spark_logsource.mysql._kernel.typed";

/* The conversions of one image shape's present columns, in plan order. */
struct tk_plan {
    Py_ssize_t n;
    tk_conv convs[];
};

static void typed_capsule_destructor(PyObject *capsule)
{
    PyMem_Free(PyCapsule_GetPointer(capsule, TYPED_CAPSULE));
}

/* compile_typed(convs) -> capsule; convs: one (source, target, unsigned, bits, precision, scale, width,
 * src_precision, src_scale) per present column (table/kernel.py conversion). */
PyObject *mk_compile_typed(PyObject *self, PyObject *args)
{
    PyObject *convs;
    if (!PyArg_ParseTuple(args, "O!:compile_typed", &PyList_Type, &convs))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(convs);
    if (m > 0xffffff)
        return PyErr_Format(PyExc_ValueError, "%zd columns", m);
    tk_plan *t = PyMem_Calloc(1, sizeof(tk_plan) + ((size_t)m + 1) * sizeof(tk_conv));
    if (t == NULL)
        return PyErr_NoMemory();
    t->n = m;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *c = PyList_GET_ITEM(convs, j);
        tk_conv *cv = &t->convs[j];
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 9) {
            PyErr_SetString(PyExc_TypeError, "a conversion is a 9-tuple");
            goto fail;
        }
        if (mk_long_item(c, 0, S_NONE, S_JSON, &cv->source) || mk_long_item(c, 1, 0, T_NTARGETS - 1, &cv->target) ||
            mk_long_item(c, 2, 0, 1, &cv->is_unsigned) || mk_long_item(c, 3, 0, 64, &cv->bits) ||
            mk_long_item(c, 4, 0, 38, &cv->precision) || mk_long_item(c, 5, 0, 38, &cv->scale) ||
            mk_long_item(c, 6, 0, 16, &cv->width) || mk_long_item(c, 7, 0, 38, &cv->src_precision) ||
            mk_long_item(c, 8, 0, 38, &cv->src_scale))
            goto fail;
        if (cv->source == S_INT && cv->bits < 8) {
            PyErr_SetString(PyExc_ValueError, "an integer conversion needs its width");
            goto fail;
        }
    }
    PyObject *capsule = PyCapsule_New(t, TYPED_CAPSULE, typed_capsule_destructor);
    if (capsule == NULL)
        PyMem_Free(t);
    return capsule;
fail:
    PyMem_Free(t);
    return NULL;
}

void mk_tk_side_clear(tk_side *s)
{
    if (s->cols != NULL)
        for (Py_ssize_t j = 0; j < s->m; j++)
            tk_col_free(&s->cols[j]);
    PyMem_Free(s->cols);
    s->cols = NULL;
}

/* Decode one image at *pos into the side's columns: MK_OK, MK_ERR (an exception is set) or TK_DECLINE. */
static int typed_image(mk_ctx *x, const mk_plan *plan, const tk_plan *conv, size_t *pos, size_t row_start,
                       tk_side *s)
{
    size_t p = *pos;
    if (plan->null_bytes > x->end - p)
        return mk_trunc_value(x, p, "row NULL bitmap");
    const uint8_t *nulls = x->data + p;
    p += plan->null_bytes;
    for (Py_ssize_t j = 0; j < plan->n; j++) {
        const tk_conv *cv = &conv->convs[j];
        tk_col *c = &s->cols[j];
        int rc;
        if (nulls[j >> 3] >> (j & 7) & 1) {
            rc = tk_null(c, cv);
        } else {
            x->vals.len = 0;
            if (mk_emit_value(x, &x->vals, plan, &plan->cols[j], &p, row_start))
                return MK_ERR;
            rc = tk_put(c, cv, x->vals.data, x->vals.len);
        }
        if (rc == TK_NOMEM)
            return mk_nomem();
        if (rc == TK_DECLINE)
            return TK_DECLINE;
    }
    *pos = p;
    return MK_OK;
}

/* The rows of one event's row data from pos to x->end as typed columns (x->nrows counts them): MK_OK, MK_ERR or
 * TK_DECLINE (a value that does not convert; the sides then hold part of the event). */
int mk_typed_event_rows(mk_ctx *x, tk_side *first, tk_side *second, const mk_plan *plan,
                        const mk_plan *plan_after, const tk_plan *conv, const tk_plan *conv_after, int op,
                        size_t pos)
{
    while (pos < x->end) {
        size_t row_start = pos;
        int rc = typed_image(x, plan, conv, &pos, row_start, first);
        if (rc == MK_OK && op == OP_UPDATE)
            rc = typed_image(x, plan_after, conv_after, &pos, row_start, second);
        if (rc)
            return rc;
        if (pos == row_start) /* no column present: the row would repeat forever */
            return mk_raise_error(mk_CorruptDataError, x, row_start,
                                  PyUnicode_FromFormat("row %zd of %U: row image without columns", x->nrows,
                                                       x->label));
        x->nrows++;
    }
    return MK_OK;
}

/* 0 when the conversions are those of the plans' present columns, else -1 with an exception set. */
int mk_typed_fit(const tk_plan *conv, const tk_plan *conv_after, const mk_plan *plan, const mk_plan *plan_after)
{
    if (conv->n != plan->n || conv_after->n != plan_after->n) {
        PyErr_SetString(PyExc_ValueError, "the conversions do not match the plans");
        return -1;
    }
    return 0;
}

/* The lengths of every buffer of both sides, appended to marks (a run cuts a failed event off with mk_tk_seek). */
int mk_tk_mark(const tk_side *first, const tk_side *second, ls_buf *marks)
{
    marks->len = 0;
    for (int k = 0; k < 2; k++) {
        const tk_side *s = k ? second : first;
        for (Py_ssize_t j = 0; j < s->m; j++) {
            const tk_col *c = &s->cols[j];
            size_t lens[6] = {c->valid.len, c->data.len, c->ends.len, c->meta.len, c->mends.len, c->text};
            if (ls_buf_put(marks, lens, sizeof lens))
                return mk_nomem();
        }
    }
    return 0;
}

/* Both sides cut back to the lengths mk_tk_mark kept. */
void mk_tk_seek(tk_side *first, tk_side *second, const ls_buf *marks)
{
    const size_t *lens = (const size_t *)marks->data;
    for (int k = 0; k < 2; k++) {
        tk_side *s = k ? second : first;
        for (Py_ssize_t j = 0; j < s->m; j++, lens += 6) {
            tk_col *c = &s->cols[j];
            c->valid.len = lens[0];
            c->data.len = lens[1];
            c->ends.len = lens[2];
            c->meta.len = lens[3];
            c->mends.len = lens[4];
            c->text = lens[5];
        }
    }
}

/* Room for the typed columns of a side of m present columns (m = 0: an unused side). */
int mk_tk_side_init(tk_side *s, Py_ssize_t m)
{
    s->m = m;
    s->cols = PyMem_Calloc((size_t)m + 1, sizeof(tk_col));
    return s->cols == NULL ? mk_nomem() : 0;
}

/* ((valid, data, ends or None), ...) of a side: one entry per present column; (valid, values, ends, metadata,
 * metadata ends, text bytes) for a T_VARIANT column. */
static PyObject *tk_side_result(const tk_side *s, const tk_plan *conv)
{
    PyObject *out = PyTuple_New(s->m);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < s->m; j++) {
        const tk_col *c = &s->cols[j];
        int target = conv->convs[j].target;
        PyObject *item = TK_WIDTH[target]
                             ? Py_BuildValue("(NNO)", mk_buf_bytes(&c->valid), mk_buf_bytes(&c->data), Py_None)
                         : target == T_VARIANT
                             ? Py_BuildValue("(NNNNNn)", mk_buf_bytes(&c->valid), mk_buf_bytes(&c->data),
                                             mk_buf_bytes(&c->ends), mk_buf_bytes(&c->meta), mk_buf_bytes(&c->mends),
                                             (Py_ssize_t)c->text)
                             : Py_BuildValue("(NNN)", mk_buf_bytes(&c->valid), mk_buf_bytes(&c->data),
                                             mk_buf_bytes(&c->ends));
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, j, item);
    }
    return out;
}

/* (first, second) as tk_side_result gives them, second None unless the op is an UPDATE; NULL on error. */
PyObject *mk_tk_sides_result(const tk_side *first, const tk_side *second, int op, const tk_plan *conv,
                             const tk_plan *conv_after)
{
    PyObject *a = tk_side_result(first, conv);
    PyObject *b = a == NULL ? NULL : op == OP_UPDATE ? tk_side_result(second, conv_after) : Py_NewRef(Py_None);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

tk_plan *mk_get_typed(PyObject *capsule)
{
    return (tk_plan *)PyCapsule_GetPointer(capsule, TYPED_CAPSULE);
}

/* typed_rows(data, pos, plan, plan_after, typed, typed_after, op, data_base, in_block, label)
 *   -> (n, first, second), or None when a value does not convert (the event takes the Python path). */
PyObject *mk_typed_rows(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    PyObject *cap_before, *cap_after, *typed_before, *typed_after, *label;
    int op, in_block;
    long long data_base;
    if (!PyArg_ParseTuple(args, "y*nOOOOiLpU:typed_rows", &view, &start, &cap_before, &cap_after, &typed_before,
                          &typed_after, &op, &data_base, &in_block, &label))
        return NULL;
    PyObject *result = NULL;
    mk_ctx x = {0};
    tk_side first = {0}, second = {0};
    mk_plan *plan = mk_get_plan(cap_before);
    mk_plan *plan_after = plan ? mk_get_plan(cap_after) : NULL;
    tk_plan *conv = plan_after ? mk_get_typed(typed_before) : NULL;
    tk_plan *conv_after = conv ? mk_get_typed(typed_after) : NULL;
    if (conv_after == NULL)
        goto done;
    if (op < OP_INSERT || op > OP_DELETE || start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "bad op or start position");
        goto done;
    }
    if (mk_typed_fit(conv, conv_after, plan, plan_after))
        goto done;
    if (mk_tk_side_init(&first, plan->n) || mk_tk_side_init(&second, op == OP_UPDATE ? plan_after->n : 0))
        goto done;
    mk_ctx_init(&x, &view, data_base, in_block, label);
    int rc = mk_typed_event_rows(&x, &first, &second, plan, plan_after, conv, conv_after, op, (size_t)start);
    if (rc == TK_DECLINE)
        result = Py_NewRef(Py_None);
    if (rc)
        goto done;
    {
        PyObject *sides = mk_tk_sides_result(&first, &second, op, conv, conv_after);
        if (sides != NULL) {
            result = Py_BuildValue("(nOO)", x.nrows, PyTuple_GET_ITEM(sides, 0), PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    mk_tk_side_clear(&first);
    mk_tk_side_clear(&second);
    mk_ctx_clear(&x);
    PyBuffer_Release(&view);
    return result;
}

/* The (value, metadata) of one JSON text with the scratch state c, None where Python decides; NULL on error. */
static PyObject *json_variant_with(jv_ctx *c, const Py_buffer *text)
{
    ls_buf value = {0}, meta = {0};
    int ascii;
    int rc = utf8_valid(text->buf, (size_t)text->len, &ascii)
                 ? jv_convert(c, text->buf, (size_t)text->len, &value, &meta) : JV_DECLINE;
    PyObject *result = rc == JV_OK ? Py_BuildValue("(NN)", mk_buf_bytes(&value), mk_buf_bytes(&meta))
                     : rc == JV_DECLINE ? Py_NewRef(Py_None) : PyErr_NoMemory();
    ls_buf_free(&value);
    ls_buf_free(&meta);
    return result;
}

/* json_variant(text) -> (value, metadata) or None: the Variant of one JSON text (UTF-8 bytes) as a JSON column of
 * view=table gets it (_json_variant.h); None where the Python reference must decide (it may raise). */
PyObject *mk_json_variant(PyObject *self, PyObject *args)
{
    Py_buffer text;
    if (!PyArg_ParseTuple(args, "y*:json_variant", &text))
        return NULL;
    jv_ctx ctx = {0};
    PyObject *result = json_variant_with(&ctx, &text);
    PyBuffer_Release(&text);
    jv_free(&ctx);
    return result;
}

/* json_variants(texts): json_variant of each, with one scratch state, as a column's values are converted. */
PyObject *mk_json_variants(PyObject *self, PyObject *texts)
{
    PyObject *seq = PySequence_Fast(texts, "json_variants takes a sequence of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    jv_ctx ctx = {0};
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        Py_buffer text;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &text, PyBUF_SIMPLE) < 0) {
            Py_CLEAR(out);
            break;
        }
        PyObject *one = json_variant_with(&ctx, &text);
        PyBuffer_Release(&text);
        if (one == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, one);
    }
    jv_free(&ctx);
    Py_DECREF(seq);
    return out;
}

