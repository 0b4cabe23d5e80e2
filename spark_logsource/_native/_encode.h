/*
 * Primitives shared by the compiled kernels (tarantool/_kernel.c, mysql/_kernel.c): Spark Variant headers,
 * Variant integers and strings, and JSON string literals, written exactly as spark_logsource.arrow.variant and
 * spark_logsource.arrow.jsontext write them (their docstrings hold the canonical rules).
 *
 * Variant layout: Apache Spark common/variant/README.md (= Parquet VariantEncoding.md). A value header byte is
 * basic_type | value_header << 2; primitives carry their type id in value_header.
 * Return codes: 0 = written, -1 = out of memory (or over the buffer cap), 1 = the value cannot be written here
 * (a string longer than a Variant's u32 length).
 */
#ifndef SPARK_LOGSOURCE_ENCODE_H
#define SPARK_LOGSOURCE_ENCODE_H

#include <stdint.h>
#include <string.h>

#include "_buf.h"

#define VH_NULL 0x00
#define VH_TRUE 0x04
#define VH_FALSE 0x08
#define VH_INT8 (3 << 2)
#define VH_INT16 (4 << 2)
#define VH_INT32 (5 << 2)
#define VH_INT64 (6 << 2)
#define VH_DOUBLE (7 << 2)
#define VH_DECIMAL4 (8 << 2)
#define VH_DECIMAL8 (9 << 2)
#define VH_DECIMAL16 (10 << 2)
#define VH_DATE (11 << 2)
#define VH_TIMESTAMP (12 << 2)
#define VH_TIMESTAMP_NTZ (13 << 2)
#define VH_BINARY (15 << 2)
#define VH_LONG_STR (16 << 2)
#define VB_SHORT_STR 1
#define VB_OBJECT 2
#define VB_ARRAY 3

/* Smallest of 1/2/3/4 bytes that holds v unsigned; 0 when it needs more (no Variant size field can hold it). */
static inline int ls_size_of(uint64_t v)
{
    return v < 0x100 ? 1 : v < 0x10000 ? 2 : v < 0x1000000 ? 3 : v <= 0xffffffffULL ? 4 : 0;
}

/* The head of a Variant object (id_size > 0) or array (id_size = 0) of `count` elements: the header byte (is_large
 * above 255 elements) and the count, then count field ids of id_size bytes (objects) and count + 1 offsets of
 * offset_size bytes. ls_variant_head_size gives its size; ls_variant_head_at writes its first part at h and returns
 * where the ids (or, for an array, the offsets) go. */
static inline size_t ls_variant_head_size(size_t count, int id_size, int offset_size)
{
    return 1 + (count > 0xff ? 4 : 1) + count * (size_t)id_size + (count + 1) * (size_t)offset_size;
}

static inline uint8_t *ls_variant_head_at(uint8_t *h, size_t count, int id_size, int offset_size)
{
    int large = count > 0xff;
    h[0] = id_size ? (uint8_t)((((large << 4) | ((id_size - 1) << 2) | (offset_size - 1)) << 2) | VB_OBJECT)
                   : (uint8_t)((((large << 2) | (offset_size - 1)) << 2) | VB_ARRAY);
    ls_put_le(h + 1, count, large ? 4 : 1);
    return h + 1 + (large ? 4 : 1);
}

/* The head opened in front of the container's values, which start at out[base]; NULL when out of memory. */
static inline uint8_t *ls_variant_head(ls_buf *out, size_t base, size_t count, int id_size, int offset_size)
{
    uint8_t *h = ls_buf_open_gap(out, base, ls_variant_head_size(count, id_size, offset_size));
    return h == NULL ? NULL : ls_variant_head_at(h, count, id_size, offset_size);
}

/* A key of a Variant metadata dictionary: its bytes. */
typedef struct {
    const uint8_t *s;
    size_t n;
} ls_key;

/* The metadata of a dictionary of `count` distinct keys in byte order, `total` bytes together, appended to meta:
 * the header byte (version 1, sorted, offset size), the count, count + 1 offsets, the key bytes; the count and the
 * offsets take the fewest bytes that hold both. No keys: arrow/variant.py's EMPTY_METADATA (01 00 00, not "sorted").
 * 0, -1 out of memory, 1 when they would need more than 4 bytes. */
static inline int ls_variant_metadata(ls_buf *meta, const ls_key *keys, size_t count, uint64_t total)
{
    if (count == 0)
        return ls_buf_put(meta, "\x01\x00\x00", 3);
    int size = ls_size_of(total > count ? total : count);
    if (size == 0)
        return 1;
    size_t head = 1 + (size_t)size * (count + 2);
    if (ls_buf_reserve(meta, head + total))
        return -1;
    uint8_t *m = meta->data + meta->len;
    m[0] = (uint8_t)(0x01 | 0x10 | (size - 1) << 6);
    ls_put_le(m + 1, count, size);
    uint64_t off = 0;
    for (size_t i = 0; i < count; i++) {
        ls_put_le(m + 1 + (size_t)size * (i + 1), off, size);
        if (keys[i].n)
            memcpy(m + head + off, keys[i].s, keys[i].n);
        off += keys[i].n;
    }
    ls_put_le(m + 1 + (size_t)size * (count + 1), off, size);
    meta->len += head + total;
    return 0;
}

/* A Variant integer in the smallest of int8/16/32/64 that holds v. */
static inline int ls_variant_int(ls_buf *b, int64_t v)
{
    if (ls_buf_reserve(b, 9))
        return -1;
    uint8_t *d = b->data + b->len;
    int size;
    if (v >= -0x80 && v < 0x80) {
        d[0] = VH_INT8;
        size = 1;
    } else if (v >= -0x8000 && v < 0x8000) {
        d[0] = VH_INT16;
        size = 2;
    } else if (v >= -0x80000000LL && v < 0x80000000LL) {
        d[0] = VH_INT32;
        size = 4;
    } else {
        d[0] = VH_INT64;
        size = 8;
    }
    ls_put_le(d + 1, (uint64_t)v, size);
    b->len += 1 + (size_t)size;
    return 0;
}

/* A Variant string of UTF-8 s[0..n): short string below 64 bytes, else long string with a u32 length. */
static inline int ls_variant_str(ls_buf *b, const uint8_t *s, size_t n)
{
    if (n > 0xffffffffULL)
        return 1;
    if (ls_buf_reserve(b, n + 5))
        return -1;
    uint8_t *d = b->data + b->len;
    if (n < 64) {
        *d++ = (uint8_t)((n << 2) | VB_SHORT_STR);
    } else {
        *d++ = VH_LONG_STR;
        ls_put_le(d, n, 4);
        d += 4;
    }
    if (n)
        memcpy(d, s, n);
    b->len = (size_t)(d - b->data) + n;
    return 0;
}

/* A JSON string literal of valid UTF-8 s[0..n), escaped as json.encoder.encode_basestring does (\" \\ \n \r \t
 * \b \f, other controls as \u00xx, everything else kept); sets *nonascii when a byte is >= 0x80. */
static inline int ls_json_str(ls_buf *b, const uint8_t *s, size_t n, int *nonascii)
{
    static const char hex[] = "0123456789abcdef";
    if (n > (LS_BUF_MAX - 2) / 6 || ls_buf_reserve(b, 6 * n + 2)) /* worst case: every byte becomes \u00xx */
        return -1;
    uint8_t *d = b->data + b->len;
    uint8_t high = 0;
    *d++ = '"';
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            *d++ = ch;
            high |= ch;
            continue;
        }
        *d++ = '\\';
        switch (ch) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        default:
            *d++ = 'u';
            *d++ = '0';
            *d++ = '0';
            *d++ = (uint8_t)hex[ch >> 4];
            *d++ = (uint8_t)hex[ch & 15];
        }
    }
    *d++ = '"';
    b->len = (size_t)(d - b->data);
    if (high & 0x80)
        *nonascii = 1;
    return 0;
}

#endif
