/*
 * Text helpers shared by the compiled kernels: strict UTF-8 validation (the rules of CPython's UTF-8 decoder:
 * no overlongs, no surrogates, nothing above U+10FFFF), decimal digits of 64-bit integers, Python's float repr
 * and jsontext's NaN / Infinity spellings, standard base64 (RFC 4648 section 4) and canonical UUID text.
 * Writers return 0, or -1 when out of memory.
 */
#ifndef SPARK_LOGSOURCE_NATIVE_TEXT_H
#define SPARK_LOGSOURCE_NATIVE_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "_buf.h"

/* 1 when s[0..n) is valid UTF-8 as CPython's strict decoder accepts it; *ascii = 1 when all bytes < 0x80. */
static inline int utf8_valid(const uint8_t *s, size_t n, int *ascii)
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
static inline int u64_text(char *dst, uint64_t v)
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

static inline int i64_text(char *dst, int64_t v)
{
    if (v < 0) {
        dst[0] = '-';
        return 1 + u64_text(dst + 1, (uint64_t)0 - (uint64_t)v);
    }
    return u64_text(dst, (uint64_t)v);
}

/* Python's repr() of a finite double appended to `b` (float.__repr__: shortest round-trip, 'r' mode). */
static inline int put_float_repr(ls_buf *b, double d)
{
    char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return -1;
    }
    int rc = ls_buf_put(b, s, strlen(s)) ? -1 : 0;
    PyMem_Free(s);
    return rc;
}

/* jsontext's text of a float without quotes: repr, or NaN / Infinity / -Infinity. */
static inline int put_float_text(ls_buf *b, double d)
{
    if (isnan(d))
        return ls_buf_put(b, "NaN", 3) ? -1 : 0;
    if (isinf(d))
        return (d > 0 ? ls_buf_put(b, "Infinity", 8) : ls_buf_put(b, "-Infinity", 9)) ? -1 : 0;
    return put_float_repr(b, d);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with '=' padding (RFC 4648 section 4), as base64.b64encode. */
static inline int put_base64(ls_buf *b, const uint8_t *s, size_t n)
{
    if (ls_buf_reserve(b, (n + 2) / 3 * 4))
        return -1;
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
    return 0;
}

/* Canonical lowercase 8-4-4-4-12 text of a 16-byte UUID (str(uuid.UUID(bytes=...))). */
static inline int put_uuid_text(ls_buf *b, const uint8_t *u)
{
    static const char hex[] = "0123456789abcdef";
    if (ls_buf_reserve(b, 36))
        return -1;
    uint8_t *d = b->data + b->len;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *d++ = '-';
        *d++ = (uint8_t)hex[u[i] >> 4];
        *d++ = (uint8_t)hex[u[i] & 15];
    }
    b->len += 36;
    return 0;
}

#endif
