/*
 * spark_logsource.tarantool._kernel, rows: one row (its header and body maps -> the scalar columns and the values),
 * and decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list], the rows of one block.
 */
#include "_kernel.h"

static const char *const SCALAR_NAMES[C_NSCALAR] = {
    "lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id",
};
static const char *const VALUE_NAMES[V_COUNT] = {"key", "tuple", "ops", "extra"};

/* ---- one row ---- */

/* Arrow columns: the type name of a row (names.type_name). */
static int arrow_type(acols *s, uint64_t code)
{
    if (code < 256)
        return ac_var(s, A_TYPE, tt_type_text_cache[code], (size_t)tt_type_len_cache[code], 1);
    PyObject *name = tt_type_name(code);
    if (name == NULL)
        return -1;
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(name, &n);
    int rc = text == NULL ? -1 : ac_var(s, A_TYPE, text, (size_t)n, 1);
    Py_DECREF(name);
    return rc;
}

/* Arrow columns: the scalars of a row whose values are written; the row is then complete. */
static int arrow_scalars(decoder *d, uint64_t rtype, uint64_t lsn, uint64_t replica_id, uint64_t tsn, int is_commit,
                         int has_ts, int64_t micros, uint64_t group_id, int64_t space_id, int64_t index_id)
{
    acols *s = d->out;
    if (ac_i64(s, A_OFFSET, d->offset_value, 1) || ac_i64(s, A_LSN, (int64_t)lsn, 1) ||
        ac_i32(s, A_REPLICA_ID, (int32_t)replica_id, 1) || ac_i64(s, A_TSN, (int64_t)tsn, 1) ||
        ac_bool(s, A_IS_COMMIT, is_commit, 1) || ac_i64(s, A_TIMESTAMP, has_ts ? micros : 0, has_ts) ||
        arrow_type(s, rtype) || ac_i32(s, A_GROUP_ID, (int32_t)group_id, 1) ||
        ac_i32(s, A_SPACE_ID, space_id < 0 ? 0 : (int32_t)space_id, space_id >= 0) ||
        ac_i32(s, A_INDEX_ID, index_id < 0 ? 0 : (int32_t)index_id, index_id >= 0) ||
        ac_var(s, A_CORRUPT, NULL, 0, 0))
        return -1;
    s->rows++;
    return 0;
}

static PyObject *int_obj(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }

int tt_decode_row(decoder *d, mp_rd *r)
{
    if (d->out != NULL && ac_row_room(d->out))
        return -1;
    if (tt_read_map(d, r, &d->header, 1))
        return -1;
    /* Header value checks (rows._check_header) on the deduplicated map. */
    const kv_entry *he = (const kv_entry *)d->header.data;
    size_t hn = d->header.len / sizeof(kv_entry);
    uint64_t rtype = 0, lsn = 0, replica_id = 0, group_id = 0, tsn_raw = 0, flags = 0;
    int has_tsn = 0, has_ts = 0;
    double ts = 0;
    for (size_t i = 0; i < hn; i++) {
        mp_item it;
        uint64_t code = he[i].code;
        if (tt_entry_item(&he[i], &it))
            return tt_fail(d, "malformed header value");
        if (code <= H_STREAM_ID && code != H_TIMESTAMP) {
            if (it.kind != MPK_UINT)
                return tt_fail(d, "header key %llu is not an unsigned integer", (unsigned long long)code);
            switch (code) {
            case H_TYPE: rtype = it.v.u; break;
            case H_LSN: lsn = it.v.u; break;
            case H_REPLICA_ID: replica_id = it.v.u; break;
            case H_GROUP_ID: group_id = it.v.u; break;
            case H_TSN: tsn_raw = it.v.u; has_tsn = 1; break;
            case H_FLAGS: flags = it.v.u; break;
            default: break;
            }
        } else if (code == H_TIMESTAMP) {
            if (it.kind != MPK_FLOAT32 && it.kind != MPK_FLOAT64)
                return tt_fail(d, "header timestamp is not a double");
            ts = it.v.d;
            has_ts = 1;
        }
    }
    /* Body: present unless the row is a NOP not followed by an empty map. */
    int has_body = 0;
    d->body.len = 0;
    if (r->p < r->end && (rtype != TYPE_NOP || *r->p == 0x80)) {
        if (tt_read_map(d, r, &d->body, 0))
            return -1;
        has_body = 1;
    }
    /* Scalars (rows._scalars). */
    if (lsn >= INT63)
        return tt_fail(d, "lsn %llu is out of range", (unsigned long long)lsn);
    if (replica_id >= INT31)
        return tt_fail(d, "replica_id %llu is out of range", (unsigned long long)replica_id);
    if (group_id >= INT31)
        return tt_fail(d, "group_id %llu is out of range", (unsigned long long)group_id);
    uint64_t tsn = lsn;
    int is_commit = 1;
    if (has_tsn) {
        tsn = lsn - tsn_raw; /* mod 2^64 */
        if (tsn >= INT63)
            return tt_fail(d, "transaction id %llu is out of range", (unsigned long long)tsn);
        is_commit = (flags & 1) != 0;
    }
    int64_t micros = 0;
    if (has_ts) {
        if (!isfinite(ts))
            return tt_fail(d, "timestamp is not finite");
        double rounded = nearbyint(ts * 1e6); /* round-half-even, as Python's round() */
        if (!(rounded >= -9223372036854775808.0 && rounded < 9223372036854775808.0))
            return tt_fail(d, "timestamp is out of range");
        micros = (int64_t)rounded;
    }
    const kv_entry *be = (const kv_entry *)d->body.data;
    size_t bn = d->body.len / sizeof(kv_entry);
    int64_t space_id = -1, index_id = -1;
    for (size_t i = 0; i < bn; i++) {
        if (be[i].code != B_SPACE_ID && be[i].code != B_INDEX_ID)
            continue;
        mp_item it;
        if (tt_entry_item(&be[i], &it) || it.kind != MPK_UINT || it.v.u >= INT31)
            return tt_fail(d, "%s is not an unsigned integer below 2147483648",
                           be[i].code == B_SPACE_ID ? "space_id" : "index_id");
        if (be[i].code == B_SPACE_ID)
            space_id = (int64_t)it.v.u;
        else
            index_id = (int64_t)it.v.u;
    }
    if (space_id >= 0 && index_id < 0)
        index_id = 0; /* Tarantool's request default: the primary index (rows._scalars) */
    /* Split key / tuple / ops / extra (rows._split_values). */
    tt_extra_clear(d);
    for (size_t i = 0; i < hn; i++) {
        uint64_t code = he[i].code;
        if (code == H_TYPE || code == H_REPLICA_ID || code == H_LSN || code == H_TIMESTAMP || code == H_GROUP_ID ||
            code == H_TSN)
            continue;
        if (tt_extra_put(d, tt_header_key_name(code), he[i].val, he[i].len, he[i].flags))
            return -1;
    }
    size_t header_members = d->extra.len / sizeof(extra_entry);
    const kv_entry *key = NULL, *tup = NULL, *ops = NULL;
    if (has_body) {
        uint64_t tuple_code = rtype == TYPE_UPDATE ? B_OPS : B_TUPLE;
        uint64_t ops_code = rtype == TYPE_UPDATE ? B_TUPLE : B_OPS;
        for (size_t i = 0; i < bn; i++) {
            uint64_t code = be[i].code;
            if (code == B_KEY) {
                key = &be[i];
            } else if (code == B_TUPLE && tuple_code == B_TUPLE) {
                tup = &be[i];
            } else if (code == ops_code) {
                ops = &be[i];
            } else if (code != B_SPACE_ID && code != B_INDEX_ID) {
                PyObject *name = tt_body_key_name(rtype, code);
                if (name == NULL)
                    return -1;
                Py_ssize_t clash = header_members ? tt_extra_find(d, name, header_members) : -1;
                if (clash == -2) {
                    Py_DECREF(name);
                    return -1;
                }
                if (clash >= 0) {
                    PyObject *prefixed = PyUnicode_Concat(tt_body_prefix, name);
                    Py_DECREF(name);
                    name = prefixed;
                }
                if (tt_extra_put(d, name, be[i].val, be[i].len, be[i].flags))
                    return -1;
            }
        }
    }
    /* Values. */
    if (tt_put_value(d, V_KEY, key ? key->val : NULL, key ? key->len : 0, key ? key->flags : 0) ||
        tt_put_value(d, V_TUPLE, tup ? tup->val : NULL, tup ? tup->len : 0, tup ? tup->flags : 0) ||
        tt_put_value(d, V_OPS, ops ? ops->val : NULL, ops ? ops->len : 0, ops ? ops->flags : 0))
        return -1;
    if (d->extra.len == 0) {
        if (tt_put_value(d, V_EXTRA, NULL, 0, 0))
            return -1;
    } else {
        int xflags;
        if (tt_build_extra_msgpack(d, &xflags) || tt_put_value(d, V_EXTRA, d->synth.data, d->synth.len, xflags))
            return -1;
    }
    tt_extra_clear(d);
    if (d->out != NULL)
        return arrow_scalars(d, rtype, lsn, replica_id, tsn, is_commit, has_ts, micros, group_id, space_id, index_id);
    /* Scalars last, so that every column grows by exactly one per row or not at all. */
    PyObject *lsn_obj = int_obj(lsn);
    if (tt_push(d, C_LSN, lsn_obj))
        return -1;
    if (tt_push(d, C_REPLICA_ID, int_obj(replica_id)) ||
        tt_push(d, C_TSN, tsn == lsn ? Py_NewRef(lsn_obj) : int_obj(tsn)) ||
        tt_push(d, C_IS_COMMIT, Py_NewRef(is_commit ? Py_True : Py_False)))
        return -1;
    PyObject *ts_obj;
    if (!has_ts) {
        ts_obj = Py_NewRef(Py_None);
    } else if (d->last_ts != NULL && d->last_ts_value == micros) {
        ts_obj = Py_NewRef(d->last_ts);
    } else {
        ts_obj = PyLong_FromLongLong(micros);
        if (ts_obj == NULL)
            return -1;
        Py_XSETREF(d->last_ts, Py_NewRef(ts_obj));
        d->last_ts_value = micros;
    }
    if (tt_push(d, C_TIMESTAMP, ts_obj) || tt_push(d, C_TYPE, tt_type_name(rtype)) ||
        tt_push(d, C_GROUP_ID, int_obj(group_id)) ||
        tt_push(d, C_SPACE_ID, space_id < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(space_id)) ||
        tt_push(d, C_INDEX_ID, index_id < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(index_id)))
        return -1;
    return 0;
}

/* ---- module function ---- */

void tt_decoder_free(decoder *d)
{
    for (int c = 0; c < MAX_COLS; c++) {
        PyObject **objs = (PyObject **)d->cols[c].data;
        size_t n = d->cols[c].len / sizeof(PyObject *);
        for (size_t i = 0; i < n; i++)
            Py_DECREF(objs[i]);
        ls_buf_free(&d->cols[c]);
    }
    tt_extra_clear(d);
    ls_buf_free(&d->header);
    ls_buf_free(&d->body);
    ls_buf_free(&d->extra);
    ls_buf_free(&d->synth);
    tc_free(&d->tc);
    Py_CLEAR(d->last_ts);
    Py_CLEAR(d->last_meta);
}

/* Move the collected objects into lists of the result dict (keys in rows.output_keys order). */
static PyObject *build_result(decoder *d, size_t nrows)
{
    PyObject *result = PyDict_New();
    if (result == NULL)
        return NULL;
    char name[32];
    for (int c = 0; c < d->ncols; c++) {
        size_t n = d->cols[c].len / sizeof(PyObject *);
        if (n != nrows) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_SystemError, "column lengths differ");
            return NULL;
        }
        PyObject *list = PyList_New((Py_ssize_t)n);
        if (list == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyObject **objs = (PyObject **)d->cols[c].data;
        for (size_t i = 0; i < n; i++)
            PyList_SET_ITEM(list, (Py_ssize_t)i, objs[i]); /* steals */
        d->cols[c].len = 0;
        const char *key;
        if (c < C_NSCALAR) {
            key = SCALAR_NAMES[c];
        } else if (d->fmt == FMT_VARIANT) {
            int v = (c - C_NSCALAR) / 2;
            snprintf(name, sizeof name, "%s.%s", VALUE_NAMES[v], (c - C_NSCALAR) % 2 ? "metadata" : "value");
            key = name;
        } else {
            key = VALUE_NAMES[c - C_NSCALAR];
        }
        int rc = PyDict_SetItemString(result, key, list);
        Py_DECREF(list);
        if (rc) {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

const char tt_decode_payload_doc[] = PyDoc_STR(
             "decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list]\n\n"
             "The rows of one Tarantool block payload as equal-length column lists; same contract and output as\n"
             "spark_logsource.tarantool.decode.rows.decode_payload_py. Malformed rows raise\n"
             "CorruptDataError(path, block_offset, 'row N at payload byte P: ...').");

PyObject *tt_decode_payload(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    const char *tuple_format;
    PyObject *path, *block_offset;
    if (!PyArg_ParseTuple(args, "y*sOO:decode_payload", &buf, &tuple_format, &path, &block_offset))
        return NULL;
    decoder d;
    memset(&d, 0, sizeof d);
    if (strcmp(tuple_format, "variant") == 0) {
        d.fmt = FMT_VARIANT;
    } else if (strcmp(tuple_format, "json") == 0) {
        d.fmt = FMT_JSON;
    } else if (strcmp(tuple_format, "msgpack") == 0) {
        d.fmt = FMT_MSGPACK;
    } else {
        PyBuffer_Release(&buf);
        return PyErr_Format(PyExc_ValueError,
                            "tuple_format must be one of ('variant', 'json', 'msgpack'), got '%s'", tuple_format);
    }
    d.ncols = C_NSCALAR + (d.fmt == FMT_VARIANT ? 2 * V_COUNT : V_COUNT);
    d.base = buf.buf;
    d.end = d.base + buf.len;
    d.path = path;
    d.block_offset = block_offset;
    mp_rd r = {d.base, d.end};
    PyObject *result = NULL;
    size_t nrows = 0;
    while (r.p < r.end) {
        d.row = (Py_ssize_t)nrows;
        d.row_pos = (size_t)(r.p - d.base);
        if (tt_decode_row(&d, &r))
            goto done;
        nrows++;
    }
    result = build_result(&d, nrows);
done:
    tt_decoder_free(&d);
    PyBuffer_Release(&buf);
    return result;
}

