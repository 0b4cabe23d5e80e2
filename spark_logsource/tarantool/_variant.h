/*
 * msgpack value -> Spark Variant (value, metadata), byte-identical to spark_logsource.arrow.variant.encode_variant
 * applied to the Python value msgpack-python + spark_logsource.tarantool.decode.mpext would decode.
 *
 * Layout: Apache Spark common/variant/README.md (= Parquet VariantEncoding.md); the canonical choices
 * (smallest int width, uint64 above int64 -> decimal16 scale 0, float32/64 -> double, short string < 64 bytes,
 * objects sorted by key bytes with values in that order and last duplicate winning, smallest id/offset
 * sizes, is_large only above 255 elements, sorted metadata dictionary) are the rules in arrow/variant.py's
 * docstring. Two passes: collect every map key (converted to text as jsontext.key_text does) to build the
 * metadata dictionary, then encode with the field ids. Values the C code does not render itself (Tarantool
 * ext types other than uuid, invalid UTF-8, map/array keys, nesting deeper than TC_MAX_DEPTH) return
 * TC_FALLBACK: the caller then encodes the whole value with the Python reference.
 */
#ifndef SPARK_LOGSOURCE_VARIANT_H
#define SPARK_LOGSOURCE_VARIANT_H

#include "../_native/_encode.h"
#include "_text.h"

/* Pass 1: append a tc_key for every map key in the value, in traversal order. */
static int var_collect(tc_ctx *c, mp_rd *r, int depth)
{
    mp_item it;
    if (depth > TC_MAX_DEPTH || mp_next(r, &it))
        return TC_FALLBACK;
    switch (it.kind) {
    case MPK_ARRAY:
        for (uint32_t i = 0; i < it.n; i++) {
            int rc = var_collect(c, r, depth + 1);
            if (rc)
                return rc;
        }
        return TC_OK;
    case MPK_MAP:
        for (uint32_t i = 0; i < it.n; i++) {
            mp_item key;
            tc_key k;
            if (mp_next(r, &key) || key.kind == MPK_ARRAY || key.kind == MPK_MAP)
                return TC_FALLBACK;
            int rc = key_ref(c, &key, &k);
            if (rc)
                return rc;
            if (ls_buf_put(&c->keys, &k, sizeof k))
                return TC_NOMEM;
            rc = var_collect(c, r, depth + 1);
            if (rc)
                return rc;
        }
        return TC_OK;
    case MPK_STR: {
        int ascii;
        return utf8_valid(it.data, it.n, &ascii) ? TC_OK : TC_FALLBACK;
    }
    case MPK_EXT:
        return (it.ext == MP_EXT_UUID && it.n == 16) ? TC_OK : TC_FALLBACK;
    default:
        return TC_OK;
    }
}

/*
 * Build the metadata (c->meta) from the collected keys and give every key occurrence its field id
 * (c->ids, parallel to c->keys). Dictionary = sorted distinct key texts.
 */
/* Were the map keys just collected (c->keys) the same texts, in the same order, as the previous value's? */
static int var_same_keys(const tc_ctx *c, size_t n)
{
    if (c->prev_count != n || c->prev_ids.len != n * sizeof(uint32_t))
        return 0;
    const tc_key *keys = (const tc_key *)c->keys.data;
    const uint8_t *p = c->prev_keys.data, *end = p + c->prev_keys.len;
    for (size_t i = 0; i < n; i++) {
        uint32_t len;
        if ((size_t)(end - p) < 4)
            return 0;
        memcpy(&len, p, 4);
        p += 4;
        if (len != keys[i].len || (size_t)(end - p) < len || memcmp(p, key_bytes(c, &keys[i]), len) != 0)
            return 0;
        p += len;
    }
    return p == end;
}

/* Remember the keys, field ids and metadata of this value for the next one (rows of a table repeat them). */
static int var_remember_keys(tc_ctx *c, size_t n)
{
    const tc_key *keys = (const tc_key *)c->keys.data;
    c->prev_count = (size_t)-1;
    c->prev_keys.len = c->prev_ids.len = c->prev_meta.len = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = keys[i].len;
        if (ls_buf_put(&c->prev_keys, &len, 4) || ls_buf_put(&c->prev_keys, key_bytes(c, &keys[i]), len))
            return TC_NOMEM;
    }
    if (ls_buf_put(&c->prev_ids, c->ids.data, c->ids.len) || ls_buf_put(&c->prev_meta, c->meta.data, c->meta.len))
        return TC_NOMEM;
    c->prev_count = n;
    return TC_OK;
}

static int var_build_metadata_sorted(tc_ctx *c);

/*
 * Build the metadata (c->meta) from the collected keys and give every key occurrence its field id
 * (c->ids, parallel to c->keys). A value whose keys are those of the previous value reuses its result.
 */
static int var_build_metadata(tc_ctx *c)
{
    size_t n = c->keys.len / sizeof(tc_key);
    if (n == 0) {
        c->ids.len = c->meta.len = 0;
        return ls_variant_metadata(&c->meta, NULL, 0, 0) ? TC_NOMEM : TC_OK; /* the empty dictionary */
    }
    if (var_same_keys(c, n)) {
        c->ids.len = c->meta.len = 0;
        if (ls_buf_put(&c->ids, c->prev_ids.data, c->prev_ids.len) ||
            ls_buf_put(&c->meta, c->prev_meta.data, c->prev_meta.len))
            return TC_NOMEM;
        return TC_OK;
    }
    int rc = var_build_metadata_sorted(c);
    return rc ? rc : var_remember_keys(c, n);
}

static int var_build_metadata_sorted(tc_ctx *c)
{
    size_t n = c->keys.len / sizeof(tc_key);
    c->meta.len = 0;
    c->ids.len = 0;
    if (n > UINT32_MAX / 2)
        return TC_FALLBACK;
    c->order.len = c->distinct.len = 0;
    if (ls_buf_reserve(&c->order, 2 * n * sizeof(uint32_t)) || ls_buf_reserve(&c->ids, n * sizeof(uint32_t))
        || ls_buf_reserve(&c->distinct, n * sizeof(ls_key)))
        return TC_NOMEM;
    uint32_t *idx = (uint32_t *)c->order.data;
    uint32_t *tmp = idx + n;
    uint32_t *ids = (uint32_t *)c->ids.data;
    ls_key *distinct = (ls_key *)c->distinct.data;
    c->ids.len = n * sizeof(uint32_t);
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)i;
    keys_sort(c, idx, tmp, n);
    const tc_key *keys = (const tc_key *)c->keys.data;
    /* Assign ids; the distinct keys (first occurrence of each) are listed in order. */
    uint32_t count = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || key_cmp(c, &keys[idx[i - 1]], &keys[idx[i]]) != 0) {
            const tc_key *k = &keys[idx[i]];
            distinct[count++] = (ls_key){key_bytes(c, k), k->len};
            total += k->len;
        }
        ids[idx[i]] = count - 1;
    }
    int rc = ls_variant_metadata(&c->meta, distinct, count, total);
    return rc < 0 ? TC_NOMEM : rc ? TC_FALLBACK : TC_OK;
}

static int var_encode(tc_ctx *c, mp_rd *r, int depth, size_t *keypos);

static int var_field_cmp(const void *a, const void *b)
{
    const tc_field *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Object: values written in msgpack order, then sorted by field id (= key order). A map whose keys repeat (as
 * text) goes to the Python path: which value wins, and which keys of the dropped values still count for the
 * metadata dictionary, are the reference's dict semantics. */
static int var_object(tc_ctx *c, mp_rd *r, uint32_t n, int depth, size_t *keypos)
{
    size_t base = c->out.len;
    size_t sbase = c->stack.len;
    const uint32_t *ids = (const uint32_t *)c->ids.data;
    if (ls_buf_reserve(&c->stack, (size_t)n * sizeof(tc_field)))
        return TC_NOMEM;
    c->stack.len += (size_t)n * sizeof(tc_field);
    int sorted = 1;
    for (uint32_t i = 0; i < n; i++) {
        mp_item key;
        if (mp_next(r, &key))
            return TC_FALLBACK;
        uint32_t id = ids[(*keypos)++];
        size_t start = c->out.len;
        int rc = var_encode(c, r, depth + 1, keypos);
        if (rc)
            return rc;
        tc_field *f = (tc_field *)(c->stack.data + sbase);
        f[i].id = id;
        f[i].index = i;
        f[i].start = start;
        f[i].len = c->out.len - start;
        if (i > 0 && f[i - 1].id >= id)
            sorted = 0;
    }
    tc_field *f = (tc_field *)(c->stack.data + sbase);
    uint32_t m = n;
    if (!sorted) {
        if (n <= 16) { /* insertion sort: small objects are the common case, qsort's setup costs more */
            for (uint32_t i = 1; i < n; i++) {
                tc_field v = f[i];
                uint32_t j = i;
                while (j > 0 && var_field_cmp(&f[j - 1], &v) > 0) {
                    f[j] = f[j - 1];
                    j--;
                }
                f[j] = v;
            }
        } else {
            qsort(f, n, sizeof(tc_field), var_field_cmp);
        }
        for (uint32_t i = 1; i < n; i++)
            if (f[i].id == f[i - 1].id)
                return TC_FALLBACK;
        /* Rewrite the values in field order. */
        size_t total = c->out.len - base;
        c->tmp.len = 0;
        if (ls_buf_put(&c->tmp, c->out.data + base, total))
            return TC_NOMEM;
        size_t pos = base;
        for (uint32_t i = 0; i < m; i++) {
            memcpy(c->out.data + pos, c->tmp.data + (f[i].start - base), f[i].len);
            f[i].start = pos;
            pos += f[i].len;
        }
        c->out.len = pos;
    }
    uint64_t data = c->out.len - base;
    uint32_t max_id = 0;
    for (uint32_t i = 0; i < m; i++)
        if (f[i].id > max_id)
            max_id = f[i].id;
    int os = ls_size_of(data), is = ls_size_of(max_id);
    if (os == 0 || is == 0)
        return TC_FALLBACK;
    /* Offsets are needed after the gap moves the values: record them first. */
    uint8_t *p = ls_variant_head(&c->out, base, m, is, os);
    if (p == NULL)
        return TC_NOMEM;
    f = (tc_field *)(c->stack.data + sbase);
    for (uint32_t i = 0; i < m; i++, p += is)
        ls_put_le(p, f[i].id, is);
    for (uint32_t i = 0; i < m; i++, p += os)
        ls_put_le(p, f[i].start - base, os);
    ls_put_le(p, data, os);
    c->stack.len = sbase;
    return TC_OK;
}

static int var_array(tc_ctx *c, mp_rd *r, uint32_t n, int depth, size_t *keypos)
{
    size_t base = c->out.len;
    size_t sbase = c->stack.len;
    if (ls_buf_reserve(&c->stack, (size_t)n * sizeof(size_t)))
        return TC_NOMEM;
    c->stack.len += (size_t)n * sizeof(size_t);
    for (uint32_t i = 0; i < n; i++) {
        size_t start = c->out.len - base;
        int rc = var_encode(c, r, depth + 1, keypos);
        if (rc)
            return rc;
        ((size_t *)(c->stack.data + sbase))[i] = start;
    }
    uint64_t data = c->out.len - base;
    int os = ls_size_of(data);
    if (os == 0)
        return TC_FALLBACK;
    uint8_t *p = ls_variant_head(&c->out, base, n, 0, os);
    if (p == NULL)
        return TC_NOMEM;
    const size_t *starts = (const size_t *)(c->stack.data + sbase);
    for (uint32_t i = 0; i < n; i++, p += os)
        ls_put_le(p, starts[i], os);
    ls_put_le(p, data, os);
    c->stack.len = sbase;
    return TC_OK;
}

/* Pass 2: encode one value into c->out. */
static int var_encode(tc_ctx *c, mp_rd *r, int depth, size_t *keypos)
{
    mp_item it;
    if (depth > TC_MAX_DEPTH || mp_next(r, &it))
        return TC_FALLBACK;
    switch (it.kind) {
    case MPK_NIL:
        return ls_buf_byte(&c->out, VH_NULL) ? TC_NOMEM : TC_OK;
    case MPK_TRUE:
        return ls_buf_byte(&c->out, VH_TRUE) ? TC_NOMEM : TC_OK;
    case MPK_FALSE:
        return ls_buf_byte(&c->out, VH_FALSE) ? TC_NOMEM : TC_OK;
    case MPK_INT:
        return ls_variant_int(&c->out, it.v.i);
    case MPK_UINT:
        if (it.v.u <= (uint64_t)INT64_MAX)
            return ls_variant_int(&c->out, (int64_t)it.v.u);
        if (ls_buf_reserve(&c->out, 18))
            return TC_NOMEM;
        c->out.data[c->out.len] = VH_DECIMAL16;
        c->out.data[c->out.len + 1] = 0;
        ls_put_le(c->out.data + c->out.len + 2, it.v.u, 8);
        memset(c->out.data + c->out.len + 10, 0, 8);
        c->out.len += 18;
        return TC_OK;
    case MPK_FLOAT32:
    case MPK_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, &it.v.d, 8);
        if (ls_buf_byte(&c->out, VH_DOUBLE) || ls_buf_le(&c->out, bits, 8))
            return TC_NOMEM;
        return TC_OK;
    }
    case MPK_STR:
        return ls_variant_str(&c->out, it.data, it.n);
    case MPK_BIN:
        if (ls_buf_byte(&c->out, VH_BINARY) || ls_buf_le(&c->out, it.n, 4) || ls_buf_put(&c->out, it.data, it.n))
            return TC_NOMEM;
        return TC_OK;
    case MPK_ARRAY:
        return var_array(c, r, it.n, depth, keypos);
    case MPK_MAP:
        return var_object(c, r, it.n, depth, keypos);
    case MPK_EXT:
        if (it.ext == MP_EXT_UUID && it.n == 16) {
            uint8_t text[36];
            ls_buf t = {text, 0, sizeof text};
            put_uuid_text(&t, it.data);
            return ls_variant_str(&c->out, text, 36);
        }
        return TC_FALLBACK;
    default:
        return TC_FALLBACK;
    }
}

/*
 * Encode the (validated) msgpack value at data[0..n), appending it to c->out (what it holds stays in place: every
 * position the encoder keeps is relative to where the value starts), its metadata into c->meta.
 * Returns TC_OK, TC_FALLBACK or TC_NOMEM.
 */
static int var_transcode_append(tc_ctx *c, const uint8_t *data, size_t n)
{
    c->keytext.len = c->keys.len = c->stack.len = 0;
    mp_rd r = {data, data + n};
    int rc = var_collect(c, &r, 0);
    if (rc)
        return rc;
    rc = var_build_metadata(c);
    if (rc)
        return rc;
    r.p = data;
    size_t keypos = 0;
    return var_encode(c, &r, 0, &keypos);
}

/* var_transcode_append into an emptied c->out. */
static int var_transcode(tc_ctx *c, const uint8_t *data, size_t n)
{
    c->out.len = 0;
    return var_transcode_append(c, data, n);
}

#endif
