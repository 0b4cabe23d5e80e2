/*
 * spark_logsource.mysql._kernel, runs of rows events: rows_head (the head of one rows event), encode_rows_run (the
 * events of a run of one table and shape, walked, checked and decoded in one call; encode/runs.py), and the CRC-32
 * their checks use (crc32, crc32_folds, set_crc32_folding; ../_native/_crc32.h, whose table and switch live in
 * this file only).
 */
#include "_kernel.h"

#include "../_native/_crc32.h"

void mk_crc32_init(void) { ls_crc32_init(); }

/* ---- rows event head (fast path of rows.rows_head) --------------------------------------------------------------- */

/* rows_head(body, table_id_size, post_header_len, v2, update) -> (table_id, flags, pos, ncols, present, present_after)
 * or None.
 *
 * The post-header, v2 extra data, column count and column bitmaps of an uncompressed rows event (layout: see
 * rows.rows_head; docs/formats/mysql-binlog.md "Rows events"), for the common case only: a well-formed
 * head, a column count below 251 (one-byte packed integer) and at most 64 columns. Anything else is None, and the
 * caller takes rows.rows_head, which raises its errors: this function never raises for bad bytes. */
typedef struct {
    uint64_t table_id, flags, present, present_after;
    size_t pos, ncols;
} rows_head_t;

/* The head of a well-formed uncompressed rows event body into *h: 1, else 0 (the caller takes the Python path). */
static int read_rows_head(const uint8_t *b, size_t len, int table_id_size, int post_header_len, int v2, int update,
                          rows_head_t *h)
{
    if (table_id_size != 4 && table_id_size != 6)
        return 0;
    size_t fixed = (size_t)table_id_size + 2;
    size_t pos = post_header_len > (int)fixed ? (size_t)post_header_len : fixed;
    if (post_header_len < 0 || len < pos)
        return 0;
    h->table_id = rd_le(b, table_id_size);
    h->flags = rd_le(b + table_id_size, 2);
    if (v2) {
        if (len < fixed + 2)
            return 0;
        size_t extra_len = (size_t)rd_le(b + fixed, 2);
        if (extra_len < 2 || pos + extra_len - 2 > len)
            return 0;
        pos += extra_len - 2;
    }
    if (pos >= len || b[pos] >= 251)
        return 0;
    size_t ncols = b[pos++];
    if (ncols > 64)
        return 0;
    size_t bitmap_len = (ncols + 7) / 8;
    if (pos + bitmap_len * (update ? 2 : 1) > len)
        return 0;
    uint64_t mask = ncols == 64 ? UINT64_MAX : (((uint64_t)1 << ncols) - 1);
    h->present = rd_le(b + pos, (int)bitmap_len) & mask;
    pos += bitmap_len;
    h->present_after = h->present;
    if (update) {
        h->present_after = rd_le(b + pos, (int)bitmap_len) & mask;
        pos += bitmap_len;
    }
    h->pos = pos;
    h->ncols = ncols;
    return 1;
}

PyObject *mk_rows_head(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int table_id_size, post_header_len, v2, update;
    if (!PyArg_ParseTuple(args, "y*iipp:rows_head", &view, &table_id_size, &post_header_len, &v2, &update))
        return NULL;
    rows_head_t h;
    int ok = read_rows_head(view.buf, (size_t)view.len, table_id_size, post_header_len, v2, update, &h);
    PyBuffer_Release(&view);
    if (!ok)
        Py_RETURN_NONE;
    return Py_BuildValue("(KKnnKK)", (unsigned long long)h.table_id, (unsigned long long)h.flags, (Py_ssize_t)h.pos,
                         (Py_ssize_t)h.ncols, (unsigned long long)h.present, (unsigned long long)h.present_after);
}

/* ---- a run of rows events (encode/runs.py) ------------------------------------------------------------------- */

/* A run's images go into one pair of sides, so their int32 end offsets count from the run's first image, as
 * encode/images.py ImageColumn wants; an event that fails is cut off again with side_seek. */

#define EVENT_HEADER_LEN 19
#define MAX_EVENT_SIZE (((size_t)1 << 30) + 4096)

typedef struct {
    size_t ends, data, meta_ends, meta;
} side_mark;

static side_mark side_tell(const side *s)
{
    side_mark m = {s->ends.len, s->data.len, s->meta_ends.len, s->meta.len};
    return m;
}

static void side_seek(side *s, side_mark m)
{
    s->ends.len = m.ends;
    s->data.len = m.data;
    s->meta_ends.len = m.meta_ends;
    s->meta.len = m.meta;
}

/* CRC-32 (zlib) of [p, p + n): folded here where the processor can (_crc32.h), else through Python's zlib.crc32,
 * without copying the bytes. -1: not computed. */
static long long crc_of(PyObject *crc32, const uint8_t *p, size_t n)
{
    if (ls_crc32_folds())
        return ls_crc32(0, p, n);
    PyObject *mv = PyMemoryView_FromMemory((char *)p, (Py_ssize_t)n, PyBUF_READ);
    if (mv == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(crc32, mv);
    Py_DECREF(mv);
    if (r == NULL)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    return (long long)v;
}

/* encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size,
 *                 post_header_len, v2, table_id, ncols, present, present_after, plan, plan_after, op, as_json, label,
 *                 max_rows, max_bytes)
 *   -> (events, nrows, first, second)
 *
 * Consecutive events of buf[start:limit) (buf[0] is file offset `base`) that are all rows events of `type_code`
 * for the same table id, column count and column bitmaps, whole, with a good CRC (or, unverified, a log_pos of 0
 * or their end), at file offsets below `stop`, whose rows the plans encode without error; at most `max_rows`
 * rows and `max_bytes` event bytes (the first event is never cut by these). The walk ends before the first event
 * that is not so: that event is left to the Python path, which reads it and raises its error if it has one.
 * Between two of them, the run steps over (with the same framing checks) a TABLE_MAP whose body is `map_body` and,
 * with `skip_notes`, a statement's text: what a statement of several rows events repeats, which changes nothing of
 * the changes view's rows without their statement (a multi-row statement after another, in one transaction).
 * `events` packs five little-endian int64 per rows event: file offset, next offset, timestamp, server id, rows. */
/* What a run decodes its events' rows into: the Variant / JSON sides of encode_rows, or (conv set) the typed
 * columns of table/rows.py; with the lengths of every buffer before the current event, to cut a failed event off. */
typedef struct {
    const mk_plan *plan, *plan_after;
    const tk_plan *conv, *conv_after;
    side first, second;
    side_mark m1, m2;
    tk_side tfirst, tsecond;
    ls_buf marks;
} run_out;

static int run_mark(run_out *o)
{
    if (o->conv == NULL) {
        o->m1 = side_tell(&o->first);
        o->m2 = side_tell(&o->second);
        return 0;
    }
    return mk_tk_mark(&o->tfirst, &o->tsecond, &o->marks);
}

static void run_reset(run_out *o)
{
    if (o->conv == NULL) {
        side_seek(&o->first, o->m1);
        side_seek(&o->second, o->m2);
        return;
    }
    mk_tk_seek(&o->tfirst, &o->tsecond, &o->marks);
}

static int run_event_rows(mk_ctx *x, run_out *o, int op, size_t pos)
{
    if (o->conv == NULL)
        return mk_encode_event_rows(x, &o->first, &o->second, o->plan, o->plan_after, op, pos);
    return mk_typed_event_rows(x, &o->tfirst, &o->tsecond, o->plan, o->plan_after, o->conv, o->conv_after, op, pos);
}

static void run_clear(run_out *o)
{
    mk_side_clear(&o->first);
    mk_side_clear(&o->second);
    mk_tk_side_clear(&o->tfirst);
    mk_tk_side_clear(&o->tsecond);
    ls_buf_free(&o->marks);
}

/* The run's arguments but its output. `map_body` (NULL: none) is the body of the run's TABLE_MAP: an event of that
 * type and body between two rows events of the run changes nothing, and is stepped over; `skip_notes`: so is a
 * statement's text (MariaDB ANNOTATE_ROWS, MySQL ROWS_QUERY) when no row carries it. */
typedef struct {
    Py_ssize_t start, limit, max_rows, max_bytes, ncols, map_len;
    long long base, stop;
    int crc_len, verify, type_code, table_id_size, post_header_len, v2, op, skip_notes;
    unsigned long long table_id, present, present_after;
    PyObject *crc32;
    const uint8_t *map_body;
} run_args;

#define TABLE_MAP_EVENT 19
#define ROWS_QUERY_EVENT 29
#define ANNOTATE_ROWS_EVENT 160

/* Whether the whole event at h (`size` bytes, ending at file offset `next`) passes the walk's framing checks: its CRC
 * when verified, else a log_pos of 0 or its end. -1: the CRC function failed. */
static int event_framed(const run_args *a, const uint8_t *h, size_t size, long long next)
{
    if (a->crc_len && a->verify) {
        long long crc = crc_of(a->crc32, h, size - 4);
        if (crc < 0)
            return -1;
        return (uint32_t)crc == (uint32_t)rd_le(h + size - 4, 4);
    }
    uint32_t log_pos = (uint32_t)rd_le(h + 13, 4);
    return log_pos == 0 || log_pos == (uint32_t)next;
}

/* Whether the event at h is one a run steps over (see run_args): the run's TABLE_MAP again, or a statement's text
 * whose body the per-event path decodes without error (ROWS_QUERY: a length byte, then the text). */
static int steps_over(const run_args *a, const uint8_t *h, size_t size)
{
    size_t body_len = size - EVENT_HEADER_LEN - (size_t)a->crc_len;
    switch (h[4]) {
    case TABLE_MAP_EVENT:
        return a->map_body != NULL && body_len == (size_t)a->map_len
               && memcmp(h + EVENT_HEADER_LEN, a->map_body, body_len) == 0;
    case ANNOTATE_ROWS_EVENT:
        return a->skip_notes;
    case ROWS_QUERY_EVENT:
        return a->skip_notes && body_len >= 1;
    default:
        return 0;
    }
}

/* Walk the events of buf[start:limit] of the run's table and shape, decoding their rows into o; the five int64 of
 * each event read go to events. Stops before the first event that is anything else or that fails (0), or on an
 * error that is not the event's (-1: out of memory, the CRC function failed). */
static int walk_run(const run_args *a, const uint8_t *buf, mk_ctx *x, run_out *o, ls_buf *events,
                    Py_ssize_t *total_rows)
{
    Py_ssize_t total_bytes = 0, nevents = 0;
    size_t at = (size_t)a->start;
    int crc_len = a->crc_len;
    while (at + EVENT_HEADER_LEN <= (size_t)a->limit && a->base + (long long)at < a->stop) {
        const uint8_t *h = buf + at;
        size_t size = (size_t)rd_le(h + 9, 4);
        if (size < (size_t)(EVENT_HEADER_LEN + crc_len) || size > MAX_EVENT_SIZE || at + size > (size_t)a->limit)
            break;
        long long next = a->base + (long long)(at + size);
        if (h[4] != a->type_code) {
            /* stepped over only on the way to a rows event of the run: the run ends after its last rows event, so
             * one that is not followed by one is read again by the walk */
            if (nevents == 0 || !steps_over(a, h, size))
                break;
            int framed = event_framed(a, h, size, next);
            if (framed < 0)
                return -1;
            if (!framed)
                break;
            at += size;
            continue;
        }
        if (nevents > 0 && total_bytes + (Py_ssize_t)size > a->max_bytes)
            break;
        int framed = event_framed(a, h, size, next);
        if (framed < 0)
            return -1;
        if (!framed)
            break;
        const uint8_t *body = h + EVENT_HEADER_LEN;
        size_t body_len = size - EVENT_HEADER_LEN - (size_t)crc_len;
        rows_head_t hd;
        if (!read_rows_head(body, body_len, a->table_id_size, a->post_header_len, a->v2, a->op == OP_UPDATE, &hd)
            || hd.table_id != a->table_id || hd.ncols != (size_t)a->ncols || hd.present != a->present
            || hd.present_after != a->present_after)
            break;
        if (run_mark(o))
            return -1;
        x->data = body;
        x->end = body_len;
        x->data_base = a->base + (long long)at + EVENT_HEADER_LEN;
        x->nrows = 0;
        if (run_event_rows(x, o, a->op, hd.pos) || (nevents > 0 && *total_rows + x->nrows > a->max_rows)) {
            /* left to the per-event path, which reads this event again (and raises its error, if any) */
            run_reset(o);
            PyErr_Clear();
            break;
        }
        int64_t rec[5] = {a->base + (long long)at, next, (int64_t)rd_le(h, 4), (int64_t)rd_le(h + 5, 4), x->nrows};
        if (ls_buf_put(events, rec, sizeof rec))
            return mk_nomem();
        nevents++;
        *total_rows += x->nrows;
        total_bytes += (Py_ssize_t)size;
        at += size;
    }
    return 0;
}

/* The checks of a run's arguments; -1 with an exception set. */
static int run_check(const run_args *a, const Py_buffer *view)
{
    if (a->op < OP_INSERT || a->op > OP_DELETE || a->start < 0 || a->limit > view->len
        || (a->crc_len != 0 && a->crc_len != 4)) {
        PyErr_SetString(PyExc_ValueError, "bad op, range or checksum length");
        return -1;
    }
    return 0;
}

/* encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size, post_header_len,
 *                 v2, table_id, ncols, present, present_after, plan, plan_after, typed, typed_after, op, as_json,
 *                 label, max_rows, max_bytes[, map_body, skip_notes]) -> (events, nrows, first, second)
 * The sides are Variant / JSON images as encode_rows gives them, or, when typed / typed_after are conversions (not
 * None), typed columns as table/rows.py gives them. */
PyObject *mk_encode_rows_run(PyObject *self, PyObject *args)
{
    Py_buffer view;
    run_args a = {0};
    int as_json;
    PyObject *cap_before, *cap_after, *typed_before, *typed_after, *label;
    PyObject *map_body = Py_None;
    if (!PyArg_ParseTuple(args, "y*nnLLipOiiipKnKKOOOOipUnn|Op:encode_rows_run", &view, &a.start, &a.limit, &a.base,
                          &a.stop, &a.crc_len, &a.verify, &a.crc32, &a.type_code, &a.table_id_size,
                          &a.post_header_len, &a.v2, &a.table_id, &a.ncols, &a.present, &a.present_after, &cap_before,
                          &cap_after, &typed_before, &typed_after, &a.op, &as_json, &label, &a.max_rows,
                          &a.max_bytes, &map_body, &a.skip_notes))
        return NULL;
    if (map_body != Py_None) {
        if (!PyBytes_Check(map_body)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "the TABLE_MAP body must be bytes or None");
            return NULL;
        }
        a.map_body = (const uint8_t *)PyBytes_AS_STRING(map_body); /* the tuple of args holds it during the call */
        a.map_len = PyBytes_GET_SIZE(map_body);
    }
    PyObject *result = NULL;
    mk_ctx x = {0};
    run_out o = {0};
    ls_buf events = {0};
    Py_ssize_t total_rows = 0;
    int typed = typed_before != Py_None;
    o.plan = mk_get_plan(cap_before);
    o.plan_after = o.plan ? mk_get_plan(cap_after) : NULL;
    if (o.plan_after == NULL || run_check(&a, &view))
        goto done;
    if (typed) {
        o.conv = mk_get_typed(typed_before);
        o.conv_after = o.conv ? mk_get_typed(typed_after) : NULL;
        if (o.conv_after == NULL)
            goto done;
        if (mk_typed_fit(o.conv, o.conv_after, o.plan, o.plan_after))
            goto done;
        if (mk_tk_side_init(&o.tfirst, o.plan->n)
            || mk_tk_side_init(&o.tsecond, a.op == OP_UPDATE ? o.plan_after->n : 0))
            goto done;
    }
    x.label = label;
    x.json = as_json && !typed;
    if (walk_run(&a, view.buf, &x, &o, &events, &total_rows))
        goto done;
    {
        PyObject *sides = typed ? mk_tk_sides_result(&o.tfirst, &o.tsecond, a.op, o.conv, o.conv_after)
                                : mk_sides_result(&o.first, &o.second, a.op, x.json);
        if (sides != NULL) {
            result = Py_BuildValue("(NnOO)", mk_buf_bytes(&events), total_rows, PyTuple_GET_ITEM(sides, 0),
                                   PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    run_clear(&o);
    mk_ctx_clear(&x);
    ls_buf_free(&events);
    PyBuffer_Release(&view);
    return result;
}

/* crc32(data, value=0): zlib.crc32's result, computed by _crc32.h (folded, or a byte at a time). */
PyObject *mk_crc32(PyObject *self, PyObject *args)
{
    Py_buffer data;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &data, &value))
        return NULL;
    uint32_t crc;
    if (data.len > 5 * 1024) { /* as zlib.crc32: other threads run meanwhile */
        Py_BEGIN_ALLOW_THREADS
        crc = ls_crc32(value, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = ls_crc32(value, data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

PyObject *mk_crc32_folds(PyObject *self, PyObject *unused) { return PyBool_FromLong(ls_crc32_folds()); }

PyObject *mk_set_crc32_folding(PyObject *self, PyObject *on)
{
    int truth = PyObject_IsTrue(on);
    if (truth < 0)
        return NULL;
    ls_crc32_set_folding(truth);
    return PyBool_FromLong(ls_crc32_folds());
}
