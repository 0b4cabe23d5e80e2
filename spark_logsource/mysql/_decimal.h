/*
 * DECIMAL for the MySQL kernel: the digits of a binary NEWDECIMAL (mysql-server strings/decimal.cc bin2decimal;
 * values.decode_decimal_bytes) and the text str(Decimal) gives them. Pure digit work, inlined into the value decoder
 * (_kernel_values.c emit_decimal writes the value's Variant / JSON form); compile_plan checks a column's size with
 * decimal_size.
 */
#ifndef SPARK_LOGSOURCE_MYSQL_DECIMAL_H
#define SPARK_LOGSOURCE_MYSQL_DECIMAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_DECIMAL_DIGITS 256 /* precision is one metadata byte */

static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

/* The bytes of a DECIMAL(precision, scale) value: 4 per 9 digits and DIG2BYTES for the rest, each side of the point. */
static inline int decimal_size(int precision, int scale)
{
    int intg = precision - scale;
    return (intg / 9) * 4 + DIG2BYTES[intg % 9] + (scale / 9) * 4 + DIG2BYTES[scale % 9];
}

/* The big-endian unsigned integer of n bytes at p. */
static inline uint32_t dec_be(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Append `ndig` digits of one group to dst; 0 or -1 when the group is out of range. */
static inline int decimal_group(const uint8_t *p, int nbytes, int ndig, char *dst)
{
    uint32_t v = dec_be(p, nbytes);
    if (v >= POW10[ndig])
        return -1;
    for (int i = ndig - 1; i >= 0; i--) {
        dst[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return 0;
}

/*
 * Decimal digits of the unscaled value (leading zeros stripped, "0" for zero) into digits[], *neg the sign.
 * Returns the digit count, or -1 for a digit group out of range.
 */
static inline int decimal_digits(const uint8_t *src, int size, int precision, int scale, char *digits, int *neg)
{
    uint8_t raw[MAX_DECIMAL_DIGITS];
    memcpy(raw, src, (size_t)size);
    *neg = !(raw[0] & 0x80);
    raw[0] ^= 0x80;
    if (*neg)
        for (int i = 0; i < size; i++)
            raw[i] ^= 0xff;
    int intg = precision - scale;
    int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
    const uint8_t *p = raw;
    char *d = digits;
    if (intg0x) {
        if (decimal_group(p, DIG2BYTES[intg0x], intg0x, d))
            return -1;
        p += DIG2BYTES[intg0x];
        d += intg0x;
    }
    for (int i = 0; i < intg0 + frac0; i++, p += 4, d += 9)
        if (decimal_group(p, 4, 9, d))
            return -1;
    if (frac0x) {
        if (decimal_group(p, DIG2BYTES[frac0x], frac0x, d))
            return -1;
        d += frac0x;
    }
    int n = (int)(d - digits);
    int lead = 0;
    while (lead < n - 1 && digits[lead] == '0')
        lead++;
    if (n == 0) { /* cannot happen (precision >= 1), kept for safety */
        digits[0] = '0';
        return 1;
    }
    memmove(digits, digits + lead, (size_t)(n - lead));
    return n - lead;
}

/*
 * The unscaled value of a DECIMAL of precision <= 38 as an integer with its sign, and its digit count as
 * decimal_digits gives it (1 for zero): the same groups read into one number, without the text. Returns 0, or -1
 * for a digit group out of range.
 */
static inline int decimal_int128(const uint8_t *src, int size, int precision, int scale, __int128 *out, int *ndig)
{
    int intg = precision - scale;
    int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
    uint8_t flip = (src[0] & 0x80) ? 0 : 0xff; /* negative values are stored complemented */
    uint8_t raw[32];
    if (size > (int)sizeof raw)
        return -1; /* not from precision <= 38; the caller checks */
    for (int i = 0; i < size; i++)
        raw[i] = src[i] ^ flip;
    raw[0] ^= 0x80;
    const uint8_t *p = raw;
    unsigned __int128 v = 0;
    if (intg0x) {
        uint32_t g = dec_be(p, DIG2BYTES[intg0x]);
        if (g >= POW10[intg0x])
            return -1;
        v = g;
        p += DIG2BYTES[intg0x];
    }
    for (int i = 0; i < intg0 + frac0; i++, p += 4) {
        uint32_t g = dec_be(p, 4);
        if (g >= POW10[9])
            return -1;
        v = v * POW10[9] + g;
    }
    if (frac0x) {
        uint32_t g = dec_be(p, DIG2BYTES[frac0x]);
        if (g >= POW10[frac0x])
            return -1;
        v = v * POW10[frac0x] + g;
    }
    int d = 1;
    for (unsigned __int128 bound = 10; d < 39 && v >= bound; bound *= 10)
        d++;
    *ndig = d;
    *out = flip ? -(__int128)v : (__int128)v;
    return 0;
}

/* str(Decimal) of sign, digits D (no leading zeros) and exponent -scale (Python's to-sci-string). */
static inline int decimal_text(char *s, int neg, const char *digits, int ndig, int scale)
{
    char *o = s;
    if (neg)
        *o++ = '-';
    long leftdigits = (long)ndig - scale;
    if (leftdigits > -6) { /* plain notation (exponent <= 0 always here) */
        long dot = leftdigits;
        if (dot <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (long i = 0; i < -dot; i++)
                *o++ = '0';
            memcpy(o, digits, (size_t)ndig);
            o += ndig;
        } else if (dot >= ndig) {
            memcpy(o, digits, (size_t)ndig);
            o += ndig;
        } else {
            memcpy(o, digits, (size_t)dot);
            o += dot;
            *o++ = '.';
            memcpy(o, digits + dot, (size_t)(ndig - dot));
            o += ndig - dot;
        }
    } else {
        *o++ = digits[0];
        if (ndig > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(ndig - 1));
            o += ndig - 1;
        }
        o += sprintf(o, "E%+ld", leftdigits - 1);
    }
    return (int)(o - s);
}

#endif
