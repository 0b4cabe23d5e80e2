/*
 * msgpack value -> compact JSON text, identical to spark_logsource.arrow.jsontext.to_json applied to the Python
 * value msgpack-python + spark_logsource.tarantool.decode.mpext would decode (rules: jsontext's module docstring).
 * Strings are escaped as json.encoder.encode_basestring does (\" \\ \n \r \t \b \f, other controls as
 * \u00xx, everything else kept), floats use Python's repr, NaN/Infinity become strings, bin becomes base64,
 * map keys become jsontext.key_text. Maps whose keys collide after conversion, invalid UTF-8, Tarantool ext
 * types other than uuid and nesting deeper than TC_MAX_DEPTH return TC_FALLBACK (Python path for the value).
 */
#ifndef SPARK_LOGSOURCE_JSONW_H
#define SPARK_LOGSOURCE_JSONW_H

#include "../_native/_encode.h"
#include "_text.h"

/* JSON string literal of valid UTF-8 s[0..n). */
static int json_put_string(tc_ctx *c, const uint8_t *s, size_t n)
{
    return ls_json_str(&c->out, s, n, &c->nonascii) ? TC_NOMEM : TC_OK;
}

static int json_value(tc_ctx *c, mp_rd *r, int depth);

/* 1 when two of the n keys starting at record `first` of c->keys have the same text. */
static int json_has_duplicate_keys(tc_ctx *c, size_t first, uint32_t n)
{
    if (n < 2)
        return 0;
    const tc_key *k = (const tc_key *)c->keys.data + first;
    if (n <= 16) {
        for (uint32_t i = 1; i < n; i++)
            for (uint32_t j = 0; j < i; j++)
                if (k[i].len == k[j].len && key_cmp(c, &k[i], &k[j]) == 0)
                    return 1;
        return 0;
    }
    /* Larger maps: sort a permutation of the records (keys_sort sorts indices into c->keys). */
    size_t obase = c->order.len;
    if (ls_buf_reserve(&c->order, 2 * (size_t)n * sizeof(uint32_t)))
        return -1;
    uint32_t *idx = (uint32_t *)(c->order.data + obase);
    for (uint32_t i = 0; i < n; i++)
        idx[i] = (uint32_t)(first + i);
    keys_sort(c, idx, idx + n, n);
    const tc_key *all = (const tc_key *)c->keys.data;
    int dup = 0;
    for (uint32_t i = 1; i < n && !dup; i++)
        dup = key_cmp(c, &all[idx[i - 1]], &all[idx[i]]) == 0;
    return dup;
}

static int json_object(tc_ctx *c, mp_rd *r, uint32_t n, int depth)
{
    size_t kbase = c->keys.len;
    size_t first = kbase / sizeof(tc_key);
    if (ls_buf_byte(&c->out, '{'))
        return TC_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        mp_item key;
        tc_key k;
        if (mp_next(r, &key) || key.kind == MPK_ARRAY || key.kind == MPK_MAP)
            return TC_FALLBACK;
        int rc = key_ref(c, &key, &k);
        if (rc)
            return rc;
        if (ls_buf_put(&c->keys, &k, sizeof k))
            return TC_NOMEM;
        if (i && ls_buf_byte(&c->out, ','))
            return TC_NOMEM;
        rc = json_put_string(c, key_bytes(c, &k), k.len);
        if (rc)
            return rc;
        if (ls_buf_byte(&c->out, ':'))
            return TC_NOMEM;
        rc = json_value(c, r, depth + 1);
        if (rc)
            return rc;
    }
    int dup = json_has_duplicate_keys(c, first, n);
    if (dup < 0)
        return TC_NOMEM;
    if (dup)
        return TC_FALLBACK;
    c->keys.len = kbase;
    return ls_buf_byte(&c->out, '}') ? TC_NOMEM : TC_OK;
}

static int json_value(tc_ctx *c, mp_rd *r, int depth)
{
    mp_item it;
    char num[32];
    int ascii;
    if (depth > TC_MAX_DEPTH || mp_next(r, &it))
        return TC_FALLBACK;
    switch (it.kind) {
    case MPK_NIL:
        return ls_buf_put(&c->out, "null", 4) ? TC_NOMEM : TC_OK;
    case MPK_TRUE:
        return ls_buf_put(&c->out, "true", 4) ? TC_NOMEM : TC_OK;
    case MPK_FALSE:
        return ls_buf_put(&c->out, "false", 5) ? TC_NOMEM : TC_OK;
    case MPK_UINT:
    case MPK_INT:
        return ls_buf_put(&c->out, num, (size_t)mp_int_text(num, &it)) ? TC_NOMEM : TC_OK;
    case MPK_FLOAT32:
    case MPK_FLOAT64:
        if (isfinite(it.v.d))
            return put_float_repr(&c->out, it.v.d);
        if (ls_buf_byte(&c->out, '"') || put_float_text(&c->out, it.v.d) || ls_buf_byte(&c->out, '"'))
            return TC_NOMEM;
        return TC_OK;
    case MPK_STR:
        if (!utf8_valid(it.data, it.n, &ascii))
            return TC_FALLBACK;
        return json_put_string(c, it.data, it.n);
    case MPK_BIN:
        if (ls_buf_byte(&c->out, '"') || put_base64(&c->out, it.data, it.n) || ls_buf_byte(&c->out, '"'))
            return TC_NOMEM;
        return TC_OK;
    case MPK_ARRAY:
        if (ls_buf_byte(&c->out, '['))
            return TC_NOMEM;
        for (uint32_t i = 0; i < it.n; i++) {
            if (i && ls_buf_byte(&c->out, ','))
                return TC_NOMEM;
            int rc = json_value(c, r, depth + 1);
            if (rc)
                return rc;
        }
        return ls_buf_byte(&c->out, ']') ? TC_NOMEM : TC_OK;
    case MPK_MAP:
        return json_object(c, r, it.n, depth);
    case MPK_EXT:
        if (it.ext == MP_EXT_UUID && it.n == 16) {
            if (ls_buf_byte(&c->out, '"') || put_uuid_text(&c->out, it.data) || ls_buf_byte(&c->out, '"'))
                return TC_NOMEM;
            return TC_OK;
        }
        return TC_FALLBACK;
    default:
        return TC_FALLBACK;
    }
}

/* JSON text of the (validated) msgpack value at data[0..n) appended to c->out (what it holds stays in place);
 * c->nonascii tells if the text is ASCII. */
static int json_transcode_append(tc_ctx *c, const uint8_t *data, size_t n)
{
    c->keytext.len = c->keys.len = c->order.len = 0;
    c->nonascii = 0;
    mp_rd r = {data, data + n};
    return json_value(c, &r, 0);
}

/* JSON text of the (validated) msgpack value at data[0..n) into c->out; c->nonascii tells if it is ASCII. */
static int json_transcode(tc_ctx *c, const uint8_t *data, size_t n)
{
    c->out.len = 0;
    return json_transcode_append(c, data, n);
}

#endif
