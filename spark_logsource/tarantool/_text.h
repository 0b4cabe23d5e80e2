/*
 * Text helpers shared by the JSON and Variant transcoders of _kernel.c: strict UTF-8 validation (the
 * rules of CPython's UTF-8 decoder: no overlongs, no surrogates, nothing above U+10FFFF), decimal digits of
 * 64-bit integers, Python's float repr, standard base64 (RFC 4648 section 4), and the text a msgpack map
 * key becomes (spark_logsource.jsontext.key_text). Transcoding state (tc_ctx) lives here too.
 */
#ifndef SPARK_LOGSOURCE_TEXT_H
#define SPARK_LOGSOURCE_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "../_native/_buf.h"
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
    ls_buf stack;   /* tc_field / size_t records of open containers */
    ls_buf tmp;     /* reordering copy of object values */
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
    ls_buf_free(&c->stack);
    ls_buf_free(&c->tmp);
}

/* 1 when s[0..n) is valid UTF-8 as CPython's strict decoder accepts it; *ascii = 1 when all bytes < 0x80. */
static int utf8_valid(const uint8_t *s, size_t n, int *ascii)
{
    size_t i = 0;
    *ascii = 1;
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        *ascii = 0;
        if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n)
                return 0;
            uint8_t c1 = s[i + 1];
            uint8_t lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xc0) != 0x80)
                return 0;
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n)
                return 0;
            uint8_t c1 = s[i + 1];
            uint8_t lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xc0) != 0x80 || (s[i + 3] & 0xc0) != 0x80)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Decimal digits of a signed / unsigned 64-bit integer; returns the length (at most 20). */
static int u64_text(char *dst, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

static int i64_text(char *dst, int64_t v)
{
    if (v < 0) {
        dst[0] = '-';
        return 1 + u64_text(dst + 1, (uint64_t)0 - (uint64_t)v);
    }
    return u64_text(dst, (uint64_t)v);
}

/* Integer item (MPK_UINT / MPK_INT) as decimal text. */
static int mp_int_text(char *dst, const mp_item *it)
{
    return it->kind == MPK_UINT ? u64_text(dst, it->v.u) : i64_text(dst, it->v.i);
}

/* Python's repr() of a finite double appended to `b` (float.__repr__: shortest round-trip, 'r' mode). */
static int put_float_repr(ls_buf *b, double d)
{
    char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return TC_NOMEM;
    }
    int rc = ls_buf_put(b, s, strlen(s)) ? TC_NOMEM : TC_OK;
    PyMem_Free(s);
    return rc;
}

/* jsontext's text of a float without quotes: repr, or NaN / Infinity / -Infinity. */
static int put_float_text(ls_buf *b, double d)
{
    if (isnan(d))
        return ls_buf_put(b, "NaN", 3) ? TC_NOMEM : TC_OK;
    if (isinf(d))
        return (d > 0 ? ls_buf_put(b, "Infinity", 8) : ls_buf_put(b, "-Infinity", 9)) ? TC_NOMEM : TC_OK;
    return put_float_repr(b, d);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with '=' padding (RFC 4648 section 4), as base64.b64encode. */
static int put_base64(ls_buf *b, const uint8_t *s, size_t n)
{
    if (ls_buf_reserve(b, (n + 2) / 3 * 4))
        return TC_NOMEM;
    uint8_t *d = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *d++ = (uint8_t)B64[v >> 18];
        *d++ = (uint8_t)B64[(v >> 12) & 63];
        *d++ = (uint8_t)B64[(v >> 6) & 63];
        *d++ = (uint8_t)B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *d++ = (uint8_t)B64[v >> 18];
        *d++ = (uint8_t)B64[(v >> 12) & 63];
        *d++ = '=';
        *d++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *d++ = (uint8_t)B64[v >> 18];
        *d++ = (uint8_t)B64[(v >> 12) & 63];
        *d++ = (uint8_t)B64[(v >> 6) & 63];
        *d++ = '=';
    }
    b->len = (size_t)(d - b->data);
    return TC_OK;
}

/* Canonical lowercase 8-4-4-4-12 text of a 16-byte UUID (str(uuid.UUID(bytes=...))). */
static int put_uuid_text(ls_buf *b, const uint8_t *u)
{
    static const char hex[] = "0123456789abcdef";
    if (ls_buf_reserve(b, 36))
        return TC_NOMEM;
    uint8_t *d = b->data + b->len;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *d++ = '-';
        *d++ = (uint8_t)hex[u[i] >> 4];
        *d++ = (uint8_t)hex[u[i] & 15];
    }
    b->len += 36;
    return TC_OK;
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
