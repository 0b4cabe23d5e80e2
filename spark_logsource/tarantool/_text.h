/*
 * Transcoding state (tc_ctx) of the JSON and Variant transcoders of _kernel.c, and the text a msgpack map key
 * becomes (spark_logsource.arrow.jsontext.key_text). The generic text helpers are in ../_native/_text.h.
 */
#ifndef SPARK_LOGSOURCE_TEXT_H
#define SPARK_LOGSOURCE_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "../_native/_buf.h"
#include "../_native/_text.h"
#include "_msgpack.h"

/* Results of a transcoder: done, or "hand this whole value to the Python path", or out of memory. */
enum { TC_OK = 0, TC_FALLBACK = 1, TC_NOMEM = -1 };

/* Deepest nesting the C transcoders recurse into; deeper values go to the Python path. */
#define TC_MAX_DEPTH 200

/* A map key's text: `len` bytes at payload pointer `ptr`, or at offset `off` of tc_ctx.keytext. */
typedef struct {
    const uint8_t *ptr;
    size_t off;
    uint32_t len;
} tc_key;

/* One field of an object being encoded: its id, position in the map, and value bytes in `out`. */
typedef struct {
    uint32_t id;
    uint32_t index;
    size_t start;
    size_t len;
} tc_field;

/* Scratch state reused for every value of a payload. */
typedef struct {
    ls_buf out;     /* the value being written (variant value bytes or JSON text) */
    ls_buf meta;    /* variant metadata */
    ls_buf keytext; /* converted (non-string) key texts */
    ls_buf keys;    /* tc_key per map key, in traversal order */
    ls_buf ids;     /* uint32 field id per map key, in traversal order */
    ls_buf order;   /* uint32 index permutation for sorting */
    ls_buf distinct; /* ls_key per distinct map key, in byte order (the metadata being written) */
    ls_buf stack;   /* tc_field / size_t records of open containers */
    ls_buf tmp;     /* reordering copy of object values */
    ls_buf prev_keys; /* the previous variant's map keys in traversal order (u32 length + bytes each) */
    ls_buf prev_ids;  /* ... their field ids */
    ls_buf prev_meta; /* ... and its metadata */
    size_t prev_count; /* number of keys in prev_keys; (size_t)-1 = none remembered */
    int nonascii;   /* JSON text written so far holds non-ASCII bytes */
} tc_ctx;

static void tc_free(tc_ctx *c)
{
    ls_buf_free(&c->out);
    ls_buf_free(&c->meta);
    ls_buf_free(&c->keytext);
    ls_buf_free(&c->keys);
    ls_buf_free(&c->ids);
    ls_buf_free(&c->order);
    ls_buf_free(&c->distinct);
    ls_buf_free(&c->stack);
    ls_buf_free(&c->tmp);
    ls_buf_free(&c->prev_keys);
    ls_buf_free(&c->prev_ids);
    ls_buf_free(&c->prev_meta);
}

/* Integer item (MPK_UINT / MPK_INT) as decimal text. */
static int mp_int_text(char *dst, const mp_item *it)
{
    return it->kind == MPK_UINT ? u64_text(dst, it->v.u) : i64_text(dst, it->v.i);
}

/* Tarantool MP_EXT types (src/lib/core/mp_extension_types.h). */
enum { MP_EXT_DECIMAL = 1, MP_EXT_UUID = 2, MP_EXT_ERROR = 3, MP_EXT_DATETIME = 4, MP_EXT_INTERVAL = 6 };

/*
 * The text jsontext.key_text gives a map key read as `it` (already consumed by mp_next). A str key is
 * referenced in place; others are rendered into c->keytext. Containers, ext keys and invalid UTF-8 fall
 * back to the Python path, and so do bool and float keys (hash-equal to ints in a Python dict).
 */
static int key_ref(tc_ctx *c, const mp_item *it, tc_key *k)
{
    char num[32];
    int ascii;
    size_t start = c->keytext.len;
    k->ptr = NULL;
    k->off = start;
    switch (it->kind) {
    case MPK_STR:
        if (!utf8_valid(it->data, it->n, &ascii))
            return TC_FALLBACK;
        k->ptr = it->data;
        k->len = it->n;
        return TC_OK;
    case MPK_UINT:
    case MPK_INT: {
        int n = mp_int_text(num, it);
        if (ls_buf_put(&c->keytext, num, (size_t)n))
            return TC_NOMEM;
        break;
    }
    case MPK_NIL:
        if (ls_buf_put(&c->keytext, "null", 4))
            return TC_NOMEM;
        break;
    case MPK_TRUE:
    case MPK_FALSE:
    case MPK_FLOAT32:
    case MPK_FLOAT64:
        /* Python dict keys 1, 1.0 and True are one key: leave numeric look-alikes to the Python path. */
        return TC_FALLBACK;
    case MPK_BIN: {
        int rc = put_base64(&c->keytext, it->data, it->n);
        if (rc)
            return rc;
        break;
    }
    case MPK_EXT:
        if (it->ext == MP_EXT_UUID && it->n == 16) {
            int rc = put_uuid_text(&c->keytext, it->data);
            if (rc)
                return rc;
            break;
        }
        return TC_FALLBACK;
    default:
        return TC_FALLBACK;
    }
    if (c->keytext.len - start > UINT32_MAX)
        return TC_FALLBACK;
    k->len = (uint32_t)(c->keytext.len - start);
    return TC_OK;
}

static inline const uint8_t *key_bytes(const tc_ctx *c, const tc_key *k)
{
    return k->ptr ? k->ptr : c->keytext.data + k->off;
}

/* Bytewise order of two key texts (shorter first on a common prefix): Python's str order for valid UTF-8. */
static inline int key_cmp(const tc_ctx *c, const tc_key *a, const tc_key *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int r = n ? memcmp(key_bytes(c, a), key_bytes(c, b), n) : 0;
    if (r)
        return r;
    return (a->len > b->len) - (a->len < b->len);
}

/* Stable merge sort of uint32 indices into c->keys by key text. */
static void keys_sort(tc_ctx *c, uint32_t *idx, uint32_t *tmp, size_t n)
{
    if (n < 2)
        return;
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            uint32_t v = idx[i];
            size_t j = i;
            const tc_key *keys = (const tc_key *)c->keys.data;
            while (j > 0 && key_cmp(c, &keys[idx[j - 1]], &keys[v]) > 0) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
        return;
    }
    size_t half = n / 2;
    keys_sort(c, idx, tmp, half);
    keys_sort(c, idx + half, tmp, n - half);
    const tc_key *keys = (const tc_key *)c->keys.data;
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n)
        tmp[k++] = key_cmp(c, &keys[idx[j]], &keys[idx[i]]) < 0 ? idx[j++] : idx[i++];
    while (i < half)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof(uint32_t));
}

#endif
