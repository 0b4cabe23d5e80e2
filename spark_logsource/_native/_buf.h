/*
 * Growable byte buffer used by the Tarantool row kernel (_kernel.c).
 *
 * One buffer is reused for every value of a payload: values are written into it and copied out once
 * (PyBytes_FromStringAndSize / PyUnicode_DecodeUTF8), so the hot loop does not allocate per value.
 * Growth is bounded by LS_BUF_MAX: a transcoded value can never be larger than a small multiple of the
 * payload it comes from, and the cap turns any arithmetic surprise into a clean MemoryError.
 */
#ifndef SPARK_LOGSOURCE_BUF_H
#define SPARK_LOGSOURCE_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LS_BUF_MAX ((size_t)1 << 34) /* 16 GiB: far above any real value, below size_t overflow */

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} ls_buf;

/* Make room for `extra` more bytes; returns 0 or -1 (out of memory / over LS_BUF_MAX). */
static inline int ls_buf_grow(ls_buf *b, size_t extra)
{
    if (extra > LS_BUF_MAX || b->len > LS_BUF_MAX - extra)
        return -1;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    uint8_t *data = realloc(b->data, cap);
    if (data == NULL)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int ls_buf_reserve(ls_buf *b, size_t extra)
{
    return (b->cap - b->len >= extra) ? 0 : ls_buf_grow(b, extra);
}

static inline int ls_buf_put(ls_buf *b, const void *src, size_t n)
{
    if (ls_buf_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static inline int ls_buf_byte(ls_buf *b, uint8_t c)
{
    if (ls_buf_reserve(b, 1))
        return -1;
    b->data[b->len++] = c;
    return 0;
}

/* Little-endian unsigned integer of `size` bytes (1..8). Caller reserved the room. */
static inline void ls_put_le(uint8_t *dst, uint64_t v, int size)
{
    for (int i = 0; i < size; i++)
        dst[i] = (uint8_t)(v >> (8 * i));
}

static inline int ls_buf_le(ls_buf *b, uint64_t v, int size)
{
    if (ls_buf_reserve(b, (size_t)size))
        return -1;
    ls_put_le(b->data + b->len, v, size);
    b->len += (size_t)size;
    return 0;
}

/* Insert `n` uninitialised bytes at `pos`, shifting the tail right; returns a pointer to the gap or NULL. */
static inline uint8_t *ls_buf_open_gap(ls_buf *b, size_t pos, size_t n)
{
    if (ls_buf_reserve(b, n))
        return NULL;
    memmove(b->data + pos + n, b->data + pos, b->len - pos);
    b->len += n;
    return b->data + pos;
}

static inline void ls_buf_free(ls_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

#endif
