/*
 * spark_logsource.tarantool._kernel, maps: the header and body maps of a row read into entries (duplicate keys
 * resolved as msgpack-python's dict does), and the row's `extra` members (every key rows.py does not decode into
 * a column), collected and written back as one msgpack map.
 */
#include "_kernel.h"

/* ---- maps of a row ---- */

static int cmp_entry_code(const void *a, const void *b)
{
    const kv_entry *x = a, *y = b;
    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int cmp_entry_index(const void *a, const void *b)
{
    const kv_entry *x = a, *y = b;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/*
 * Python dict semantics for duplicate keys: the last value wins, at the position of the first key.
 * Small maps: quadratic; large ones (only in corrupt data): sort by (code, index).
 */
static void dedupe_entries(ls_buf *entries)
{
    kv_entry *e = (kv_entry *)entries->data;
    size_t n = entries->len / sizeof(kv_entry);
    size_t m = 0;
    if (n <= 16) {
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < m && e[j].code != e[i].code)
                j++;
            if (j < m) {
                uint32_t first = e[j].index;
                e[j] = e[i];
                e[j].index = first;
            } else {
                e[m++] = e[i];
            }
        }
    } else {
        qsort(e, n, sizeof(kv_entry), cmp_entry_code);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j + 1 < n && e[j + 1].code == e[i].code)
                j++;
            uint32_t first = e[i].index;
            e[m] = e[j];
            e[m].index = first;
            m++;
            i = j + 1;
        }
        qsort(e, m, sizeof(kv_entry), cmp_entry_index);
    }
    entries->len = m * sizeof(kv_entry);
}

/* Is `code` a key whose value rows.py decodes (and so may raise on) in this format? */
static int is_decoded_key(const decoder *d, int is_header, uint64_t code)
{
    if (d->fmt != FMT_MSGPACK)
        return 1;
    if (is_header)
        return code <= H_STREAM_ID;
    return code == B_SPACE_ID || code == B_INDEX_ID;
}

/* Read a header or body map into `entries` (deduplicated). Keys must be unsigned integers. */
int tt_read_map(decoder *d, mp_rd *r, ls_buf *entries, int is_header)
{
    const char *what = is_header ? "header" : "body";
    mp_item it;
    entries->len = 0;
    int rc = mp_next(r, &it);
    if (rc)
        return tt_fail_mp(d, rc, what);
    if (it.kind != MPK_MAP)
        return tt_fail(d, "row %s is not a map", what);
    /* Values nested in a map decoded whole sit one level deeper for msgpack-python's stack limit. */
    int max_depth = d->fmt == FMT_MSGPACK ? MP_MAX_DEPTH : MP_MAX_DEPTH - 1;
    /* it.n is at most half the bytes left (mp_next checked it): the room is bounded by the payload */
    if (ls_buf_reserve(entries, (size_t)it.n * sizeof(kv_entry))) {
        PyErr_NoMemory();
        return -1;
    }
    /* Entries are written field by field in place (a struct built on the stack and copied whole stalled on
     * store forwarding: the flags written by mp_skip, read back as part of a wider load). */
    kv_entry *e = (kv_entry *)entries->data;
    for (uint32_t i = 0; i < it.n; i++) {
        mp_item key;
        rc = mp_next(r, &key);
        if (rc)
            return tt_fail_mp(d, rc, what);
        if (key.kind != MPK_UINT)
            return tt_fail(d, "row %s key is not an unsigned integer", what);
        const uint8_t *val = r->p;
        int flags;
        rc = mp_skip(r, max_depth, &flags);
        if (rc)
            return (flags & MPF_TOO_DEEP) ? tt_fail(d, "msgpack nesting deeper than %d", MP_MAX_DEPTH)
                                          : tt_fail_mp(d, rc, what);
        e[i].code = key.v.u;
        e[i].val = val;
        e[i].len = (size_t)(r->p - val);
        e[i].flags = flags;
        e[i].index = i;
        entries->len += sizeof(kv_entry);
    }
    /* rows.py decodes every such value, even one a later duplicate replaces: the same errors here. Values that
     * stay are decoded again when they are rendered (variant / json), so only the others are decoded now. */
    const kv_entry *all = (const kv_entry *)entries->data;
    size_t count = entries->len / sizeof(kv_entry);
    for (size_t i = 0; i < count; i++) {
        if (!(all[i].flags & MPF_PY) || !is_decoded_key(d, is_header, all[i].code))
            continue;
        int replaced = d->fmt == FMT_MSGPACK; /* msgpack output copies bytes: nothing decodes them later */
        for (size_t j = i + 1; j < count && !replaced; j++)
            replaced = all[j].code == all[i].code;
        if (!replaced)
            continue;
        PyObject *v = tt_py_decode(d, all[i].val, all[i].len);
        if (v == NULL)
            return -1;
        Py_DECREF(v);
    }
    dedupe_entries(entries);
    return 0;
}

/* ---- extra ---- */

/* Index of member `name` among the first `limit` members, or -1 (-2 on a Python error). */
Py_ssize_t tt_extra_find(decoder *d, PyObject *name, size_t limit)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    if (limit > n)
        limit = n;
    if (d->extra_index == NULL) {
        for (size_t i = 0; i < limit; i++) {
            int eq = PyUnicode_Compare(x[i].name, name);
            if (eq == -1 && PyErr_Occurred())
                return -2;
            if (eq == 0)
                return (Py_ssize_t)i;
        }
        return -1;
    }
    PyObject *idx = PyDict_GetItemWithError(d->extra_index, name);
    if (idx == NULL)
        return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t i = PyLong_AsSsize_t(idx);
    return (size_t)i < limit ? i : -1;
}

/* extra[name] = value (Python dict semantics: a repeated name keeps its first position). Steals `name`. */
int tt_extra_put(decoder *d, PyObject *name, const uint8_t *val, size_t len, int flags)
{
    if (name == NULL)
        return -1;
    Py_ssize_t i = tt_extra_find(d, name, SIZE_MAX);
    if (i == -2) {
        Py_DECREF(name);
        return -1;
    }
    if (i >= 0) {
        extra_entry *x = (extra_entry *)d->extra.data + i;
        Py_DECREF(name);
        x->val = val;
        x->len = len;
        x->flags = flags;
        return 0;
    }
    size_t n = d->extra.len / sizeof(extra_entry);
    extra_entry e = {name, val, len, flags};
    if (ls_buf_put(&d->extra, &e, sizeof e)) {
        Py_DECREF(name);
        PyErr_NoMemory();
        return -1;
    }
    if (d->extra_index == NULL && n + 1 > 8) {
        /* Many members (corrupt or exotic rows): switch to a dict index to stay linear. */
        d->extra_index = PyDict_New();
        if (d->extra_index == NULL)
            return -1;
        extra_entry *x = (extra_entry *)d->extra.data;
        for (size_t k = 0; k <= n; k++) {
            PyObject *pos = PyLong_FromSize_t(k);
            if (pos == NULL || PyDict_SetItem(d->extra_index, x[k].name, pos)) {
                Py_XDECREF(pos);
                return -1;
            }
            Py_DECREF(pos);
        }
    } else if (d->extra_index != NULL) {
        PyObject *pos = PyLong_FromSize_t(n);
        if (pos == NULL || PyDict_SetItem(d->extra_index, name, pos)) {
            Py_XDECREF(pos);
            return -1;
        }
        Py_DECREF(pos);
    }
    return 0;
}

/* msgpack.packb(str) header for a string of n bytes (use_bin_type: fixstr, str8, str16, str32). */
static int synth_str(ls_buf *b, const char *s, size_t n)
{
    uint8_t h[5];
    size_t hl;
    if (n < 32) {
        h[0] = (uint8_t)(0xa0 | n);
        hl = 1;
    } else if (n < 256) {
        h[0] = 0xd9;
        h[1] = (uint8_t)n;
        hl = 2;
    } else if (n < 65536) {
        h[0] = 0xda;
        h[1] = (uint8_t)(n >> 8);
        h[2] = (uint8_t)n;
        hl = 3;
    } else {
        h[0] = 0xdb;
        for (int i = 0; i < 4; i++)
            h[1 + i] = (uint8_t)(n >> (24 - 8 * i));
        hl = 5;
    }
    return ls_buf_put(b, h, hl) || ls_buf_put(b, s, n);
}

/* The msgpack map of the extra members (rows._pack_extra): minimal map header, packed names, stored values. */
int tt_build_extra_msgpack(decoder *d, int *flags)
{
    extra_entry *x = (extra_entry *)d->extra.data;
    size_t n = d->extra.len / sizeof(extra_entry);
    ls_buf *b = &d->synth;
    b->len = 0;
    *flags = 0;
    int err;
    if (n < 16) {
        err = ls_buf_byte(b, (uint8_t)(0x80 | n));
    } else if (n < 65536) {
        uint8_t h[3] = {0xde, (uint8_t)(n >> 8), (uint8_t)n};
        err = ls_buf_put(b, h, 3);
    } else {
        uint8_t h[5] = {0xdf, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
        err = ls_buf_put(b, h, 5);
    }
    for (size_t i = 0; i < n && !err; i++) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(x[i].name, &len);
        if (s == NULL)
            return -1;
        err = synth_str(b, s, (size_t)len) || ls_buf_put(b, x[i].val, x[i].len);
        *flags |= x[i].flags;
    }
    if (err) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

