/*
 * Typed columns of view=table, in C: one decoded value -> one cell of an Arrow column of the table's own type.
 *
 * The value arrives as the Spark Variant primitive the row kernel (_kernel_values.c mk_emit_value) writes for it,
 * which is exactly encode_variant() of the Python value mysql/decode/values.py decodes (the twin rule of encode/images.py). So
 * the checks here are table/layout.py _base_converter's checks, made on the Variant type instead of the Python type:
 * int <-> Variant int8..int64 (and decimal16 with scale 0 above int64), float <-> double, Decimal <-> decimal4/8/16,
 * date <-> date, naive datetime <-> timestamp_ntz, aware datetime <-> timestamp, str <-> string, bytes <-> binary.
 *
 * A cell is written, or the conversion answers TK_DECLINE: the whole rows event then takes the Python path
 * (table/rows.py), which gives the error row, the ValueMismatch message, or whatever the reference does. So this
 * code only has to be right where it writes; anything unusual (a zero date, a value out of the declared range, a
 * DECIMAL wider than its column, JSON, a variant column) is declined, never guessed.
 *
 * Output per column (docs/formats/mysql-typed.md "Type mapping"): a validity byte per row (1 = value), the
 * little-endian data of fixed-width types (int8/16/32/64, float32/64, decimal128, date32 days, timestamp
 * microseconds; zeros under a null), or for string / binary the bytes back to back with the int32 end offset of
 * each row. A column of the view typed variant (JSON, or a column whose type changed too much) is passed through
 * raw (S_RAW / T_RAW): each value's Variant primitive, which table/kernel.py turns back into the Python value and
 * converts as the reference does; but a JSON column whose values arrive as text (MariaDB's JSON is a LONGTEXT) is
 * parsed here (S_JSON / T_VARIANT, ../_native/_json_variant.h): a validity byte per row, then the value bytes and
 * the metadata bytes of each row's Variant, each with its int32 end offsets.
 * Return codes: 0 written, -1 out of memory (or over LS_BUF_MAX / int32 offsets), 1 declined.
 */
#ifndef SPARK_LOGSOURCE_MYSQL_TYPED_H
#define SPARK_LOGSOURCE_MYSQL_TYPED_H

#include <stdint.h>
#include <string.h>

#include "../_native/_buf.h"
#include "../_native/_encode.h"
#include "_kernel.h" /* rd_le */
#include "../_native/_json_variant.h"
#include "../_native/_text.h"

/* What the column was declared as (the converter's checks): the S_* constants of table/kernel.py. */
enum tk_source { S_NONE, S_INT, S_YEAR, S_FLOAT, S_DECIMAL, S_DATE, S_DATETIME, S_TIMESTAMP, S_TEXT, S_BIT, S_BYTES,
                 S_RAW, S_JSON };
/* The Arrow type of the view's column: the T_* constants of table/kernel.py. */
enum tk_target { T_INT8, T_INT16, T_INT32, T_INT64, T_FLOAT32, T_FLOAT64, T_DECIMAL, T_DATE32, T_TIMESTAMP, T_STRING,
                 T_BINARY, T_RAW, T_VARIANT, T_NTARGETS };

enum { TK_OK = 0, TK_NOMEM = -1, TK_DECLINE = 1 };

/* One present column's conversion. */
typedef struct {
    int source, target;
    int is_unsigned, bits; /* S_INT: the declared integer's signedness and width (its range) */
    int precision, scale;  /* T_DECIMAL */
    int width;             /* S_BIT: bytes of the BINARY cell */
    int src_precision, src_scale; /* S_DECIMAL: the declared DECIMAL(p, s) a value must fit (p = 0: unknown) */
} tk_conv;

/* One column of one side of a rows event, as Arrow column parts (T_VARIANT: data / ends hold the Variant values,
 * meta / mends their metadata, text counts the bytes of the JSON texts, which the batch's byte cap counts as the
 * reference does; json is the parser's scratch). */
typedef struct tk_col {
    ls_buf valid, data, ends, meta, mends;
    size_t text;
    jv_ctx json;
} tk_col;

static const int TK_WIDTH[T_NTARGETS] = {1, 2, 4, 8, 4, 8, 16, 4, 8, 0, 0, 0, 0};

static inline void tk_col_free(tk_col *c)
{
    ls_buf_free(&c->valid);
    ls_buf_free(&c->data);
    ls_buf_free(&c->ends);
    ls_buf_free(&c->meta);
    ls_buf_free(&c->mends);
    jv_free(&c->json);
}

/* A Variant primitive, read back. */
enum { V_NULL, V_INT, V_DECIMAL, V_DOUBLE, V_DATE, V_TIMESTAMP, V_TIMESTAMP_NTZ, V_STRING, V_BINARY, V_OTHER };
typedef struct {
    int type;
    __int128 i; /* V_INT, V_DECIMAL (unscaled), V_DATE (days), V_TIMESTAMP* (microseconds) */
    int scale;  /* V_DECIMAL */
    double d;
    const uint8_t *s;
    size_t n;
} tk_value;

/* The signed little-endian integer of n bytes (1, 2, 4 or 8) at p: rd_le's word, sign-extended. */
static inline int64_t tk_signed_le(const uint8_t *p, int n)
{
    int shift = 64 - 8 * n;
    return (int64_t)(rd_le(p, n) << shift) >> shift;
}

/* Read the Variant primitive v[0:len] (as _encode.h writes them); V_OTHER for anything else or short bytes. */
static inline void tk_read(const uint8_t *v, size_t len, tk_value *out)
{
    *out = (tk_value){.type = V_OTHER};
    if (len < 1)
        return;
    uint8_t h = v[0];
    if ((h & 3) == VB_SHORT_STR) {
        size_t n = h >> 2;
        if (len >= 1 + n) {
            out->type = V_STRING;
            out->s = v + 1;
            out->n = n;
        }
        return;
    }
    if ((h & 3) != 0)
        return;
    switch (h) {
    case VH_NULL:
        out->type = V_NULL;
        return;
    case VH_INT8:
        if (len >= 2) {
            out->type = V_INT;
            out->i = tk_signed_le(v + 1, 1);
        }
        return;
    case VH_INT16:
        if (len >= 3) {
            out->type = V_INT;
            out->i = tk_signed_le(v + 1, 2);
        }
        return;
    case VH_INT32:
        if (len >= 5) {
            out->type = V_INT;
            out->i = tk_signed_le(v + 1, 4);
        }
        return;
    case VH_INT64:
        if (len >= 9) {
            out->type = V_INT;
            out->i = tk_signed_le(v + 1, 8);
        }
        return;
    case VH_DOUBLE:
        if (len >= 9) {
            memcpy(&out->d, v + 1, 8);
            out->type = V_DOUBLE;
        }
        return;
    case VH_DECIMAL4:
        if (len >= 6) {
            out->type = V_DECIMAL;
            out->scale = v[1];
            out->i = tk_signed_le(v + 2, 4);
        }
        return;
    case VH_DECIMAL8:
        if (len >= 10) {
            out->type = V_DECIMAL;
            out->scale = v[1];
            out->i = tk_signed_le(v + 2, 8);
        }
        return;
    case VH_DECIMAL16:
        if (len >= 18) {
            uint64_t lo = (uint64_t)tk_signed_le(v + 2, 8);
            int64_t hi = tk_signed_le(v + 10, 8);
            out->type = V_DECIMAL;
            out->scale = v[1];
            out->i = (__int128)(((unsigned __int128)(uint64_t)hi << 64) | lo);
        }
        return;
    case VH_DATE:
        if (len >= 5) {
            out->type = V_DATE;
            out->i = tk_signed_le(v + 1, 4);
        }
        return;
    case VH_TIMESTAMP:
    case VH_TIMESTAMP_NTZ:
        if (len >= 9) {
            out->type = h == VH_TIMESTAMP ? V_TIMESTAMP : V_TIMESTAMP_NTZ;
            out->i = tk_signed_le(v + 1, 8);
        }
        return;
    case VH_BINARY:
    case VH_LONG_STR:
        if (len >= 5) {
            uint32_t n32;
            memcpy(&n32, v + 1, 4);
            size_t n = n32;
            if (len - 5 >= n) {
                out->type = h == VH_BINARY ? V_BINARY : V_STRING;
                out->s = v + 5;
                out->n = n;
            }
        }
        return;
    default:
        return;
    }
}

/* The int32 end offset of the cell just written to data (or meta) into ends (or mends). */
static inline int tk_end_of(const ls_buf *data, ls_buf *ends)
{
    if (data->len > (size_t)INT32_MAX)
        return TK_NOMEM;
    int32_t end = (int32_t)data->len;
    return ls_buf_put(ends, &end, sizeof end) ? TK_NOMEM : TK_OK;
}

static inline int tk_end(tk_col *c) { return tk_end_of(&c->data, &c->ends); }

/* A null cell. */
static inline int tk_null(tk_col *c, const tk_conv *conv)
{
    if (ls_buf_byte(&c->valid, 0))
        return TK_NOMEM;
    int w = TK_WIDTH[conv->target];
    if (conv->target == T_VARIANT && tk_end_of(&c->meta, &c->mends))
        return TK_NOMEM;
    if (w == 0)
        return tk_end(c);
    if (ls_buf_reserve(&c->data, (size_t)w))
        return TK_NOMEM;
    memset(c->data.data + c->data.len, 0, (size_t)w);
    c->data.len += (size_t)w;
    return TK_OK;
}

static inline int tk_fixed(tk_col *c, const void *le, int w)
{
    if (ls_buf_byte(&c->valid, 1) || ls_buf_put(&c->data, le, (size_t)w))
        return TK_NOMEM;
    return TK_OK;
}

static inline int tk_bytes(tk_col *c, const uint8_t *s, size_t n)
{
    if (ls_buf_byte(&c->valid, 1) || ls_buf_put(&c->data, s, n))
        return TK_NOMEM;
    return tk_end(c);
}

/* 10**k for k = 0..18, the powers an int64 holds. */
static const int64_t TK_POW10[19] = {
    1LL, 10LL, 100LL, 1000LL, 10000LL, 100000LL, 1000000LL, 10000000LL, 100000000LL, 1000000000LL,
    10000000000LL, 100000000000LL, 1000000000000LL, 10000000000000LL, 100000000000000LL, 1000000000000000LL,
    10000000000000000LL, 100000000000000000LL, 1000000000000000000LL};

/* 10**k for k = 0..38 (decimal128 holds 38 digits): from the table, at most two products above 10**18. */
static inline __int128 tk_pow10(int k)
{
    if (k <= 18)
        return TK_POW10[k];
    if (k <= 36)
        return (__int128)TK_POW10[18] * TK_POW10[k - 18];
    return (__int128)TK_POW10[18] * TK_POW10[18] * TK_POW10[k - 36];
}

/* v (unscaled, at scale) rescaled to to_scale with at most `precision` digits, in *out; 0, or 1 when it does not
 * fit (more fraction digits than to_scale, or too many digits). precision is 1..38, to_scale 0..38.
 * With d = to_scale - scale, v * 10**d has at most `precision` digits exactly when |v| < 10**(precision - d)
 * (d <= precision), or v is 0; so no step multiplies past 10**precision. */
static inline int tk_rescale(__int128 v, int scale, int to_scale, int precision, __int128 *out)
{
    if (scale > to_scale)
        return 1;
    int d = to_scale - scale;
    if (v == 0) {
        *out = 0;
        return 0;
    }
    if (d > precision)
        return 1;
    int digits = precision - d;
    if (digits <= 18 && v >= INT64_MIN && v <= INT64_MAX) { /* the common case, in int64 */
        int64_t w = (int64_t)v, limit = TK_POW10[digits];
        if (w >= limit || w <= -limit)
            return 1;
        *out = d == 0 ? v : d <= 18 ? (__int128)w * TK_POW10[d] : w * tk_pow10(d);
        return 0;
    }
    __int128 limit = tk_pow10(digits);
    if (v >= limit || v <= -limit)
        return 1;
    *out = v * tk_pow10(d);
    return 0;
}

/* An exact number (unscaled v at scale) into an integer or decimal target; declined when it does not fit. */
static inline int tk_number(tk_col *c, const tk_conv *conv, __int128 v, int scale)
{
    switch (conv->target) {
    case T_INT8:
        if (scale != 0 || v < INT8_MIN || v > INT8_MAX)
            return TK_DECLINE;
        return tk_fixed(c, &(int8_t){(int8_t)v}, 1);
    case T_INT16:
        if (scale != 0 || v < INT16_MIN || v > INT16_MAX)
            return TK_DECLINE;
        return tk_fixed(c, &(int16_t){(int16_t)v}, 2);
    case T_INT32:
        if (scale != 0 || v < INT32_MIN || v > INT32_MAX)
            return TK_DECLINE;
        return tk_fixed(c, &(int32_t){(int32_t)v}, 4);
    case T_INT64:
        if (scale != 0 || v < INT64_MIN || v > INT64_MAX)
            return TK_DECLINE;
        return tk_fixed(c, &(int64_t){(int64_t)v}, 8);
    case T_DECIMAL:
        if (conv->precision < 1 || conv->precision > 38 || tk_rescale(v, scale, conv->scale, conv->precision, &v))
            return TK_DECLINE;
        return tk_fixed(c, &v, 16); /* little-endian two's complement, as Arrow's decimal128 */
    default:
        return TK_DECLINE;
    }
}

/* An integer of the declared column (S_INT): Variant int, or decimal16 with scale 0 above int64. */
static inline int tk_declared_int(const tk_conv *conv, const tk_value *x, __int128 *out)
{
    if (x->type == V_INT || (x->type == V_DECIMAL && x->scale == 0 && x->i > INT64_MAX)) {
        __int128 lo = conv->is_unsigned ? 0 : -((__int128)1 << (conv->bits - 1));
        __int128 hi = conv->is_unsigned ? ((__int128)1 << conv->bits) - 1 : ((__int128)1 << (conv->bits - 1)) - 1;
        if (x->i < lo || x->i > hi)
            return TK_DECLINE;
        *out = x->i;
        return TK_OK;
    }
    return TK_DECLINE;
}

/* A JSON column's value given as text (table/layout.py conv_json, then to_variant): its Variant, parsed here. */
static inline int tk_json(tk_col *c, const tk_value *x)
{
    int ascii;
    if (x->type == V_BINARY && !utf8_valid(x->s, x->n, &ascii)) /* Python: "is not UTF-8 JSON text" */
        return TK_DECLINE;
    size_t data_len = c->data.len, meta_len = c->meta.len;
    int rc = jv_convert(&c->json, x->s, x->n, &c->data, &c->meta);
    if (rc == JV_OK && (ls_buf_byte(&c->valid, 1) || tk_end(c) || tk_end_of(&c->meta, &c->mends)))
        rc = JV_NOMEM;
    if (rc != JV_OK) { /* nothing of the value stays (a decline hands the event to Python) */
        c->data.len = data_len;
        c->meta.len = meta_len;
        return rc == JV_DECLINE ? TK_DECLINE : TK_NOMEM;
    }
    c->text += x->n;
    return TK_OK;
}

/* The cell of one non-null value, given as its Variant bytes v[0:len]. */
static inline int tk_put(tk_col *c, const tk_conv *conv, const uint8_t *v, size_t len)
{
    tk_value x;
    tk_read(v, len, &x);
    if (x.type == V_NULL)
        return tk_null(c, conv);
    int t = conv->target;
    if (conv->source == S_RAW) /* a variant column: the value's own Variant bytes, converted in Python */
        return t == T_RAW ? tk_bytes(c, v, len) : TK_DECLINE;
    if (conv->source == S_JSON)
        return t == T_VARIANT && (x.type == V_STRING || x.type == V_BINARY) ? tk_json(c, &x) : TK_DECLINE;
    switch (conv->source) {
    case S_INT: {
        __int128 i;
        if (tk_declared_int(conv, &x, &i))
            return TK_DECLINE;
        return tk_number(c, conv, i, 0);
    }
    case S_YEAR:
        return x.type == V_INT ? tk_number(c, conv, x.i, 0) : TK_DECLINE;
    case S_DECIMAL: {
        /* the declared DECIMAL(p, s) must hold the value (a TABLE_MAP may disagree with the declaration) */
        __int128 fits;
        if (x.type != V_DECIMAL || (conv->src_precision > 0
                                    && tk_rescale(x.i, x.scale, conv->src_scale, conv->src_precision, &fits)))
            return TK_DECLINE;
        return tk_number(c, conv, x.i, x.scale);
    }
    case S_FLOAT:
        if (x.type != V_DOUBLE)
            return TK_DECLINE;
        if (t == T_FLOAT64)
            return tk_fixed(c, &x.d, 8);
        if (t == T_FLOAT32) {
            float f = (float)x.d;
            return tk_fixed(c, &f, 4);
        }
        return TK_DECLINE;
    case S_DATE:
        if (x.type != V_DATE || t != T_DATE32)
            return TK_DECLINE;
        {
            int32_t days = (int32_t)x.i;
            return tk_fixed(c, &days, 4);
        }
    case S_DATETIME:
    case S_TIMESTAMP:
        if (x.type != (conv->source == S_DATETIME ? V_TIMESTAMP_NTZ : V_TIMESTAMP) || t != T_TIMESTAMP)
            return TK_DECLINE;
        {
            int64_t us = (int64_t)x.i;
            return tk_fixed(c, &us, 8);
        }
    case S_TEXT:
        return x.type == V_STRING && t == T_STRING ? tk_bytes(c, x.s, x.n) : TK_DECLINE;
    case S_BYTES:
        return (x.type == V_BINARY || x.type == V_STRING) && t == T_BINARY ? tk_bytes(c, x.s, x.n) : TK_DECLINE;
    case S_BIT: {
        /* BIT(M) as its big-endian bytes, ceil(M / 8) of them (table/layout.py conv_bit) */
        int is_int = x.type == V_INT || (x.type == V_DECIMAL && x.scale == 0 && x.i > INT64_MAX);
        if (t != T_BINARY || conv->width < 1 || conv->width > 16 || !is_int || x.i < 0)
            return TK_DECLINE;
        unsigned __int128 u = (unsigned __int128)x.i;
        if (conv->width < 16 && (u >> (8 * conv->width)) != 0)
            return TK_DECLINE;
        uint8_t be[16];
        for (int k = 0; k < conv->width; k++)
            be[k] = (uint8_t)(u >> (8 * (conv->width - 1 - k)));
        return tk_bytes(c, be, (size_t)conv->width);
    }
    default:
        return TK_DECLINE;
    }
}

#endif
