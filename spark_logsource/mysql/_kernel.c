/*
 * spark_logsource.mysql._kernel: the compiled twin of spark_logsource.mysql.rows_encode.encode_rows_event_py, and
 * of view=table's conversion of the decoded values into typed columns (typed_kernel.py; _typed.h).
 *
 *     compile_plan(specs, order, metadata, json_keys) -> plan (a capsule)
 *     encode_rows(data, pos, plan, plan_after, op, as_json, path, data_base, in_block, label) -> (n, first, second)
 *     compile_typed(convs) -> typed (a capsule)
 *     typed_rows(data, pos, plan, plan_after, typed, typed_after, op, path, data_base, in_block, label)
 *         -> (n, first, second) or None
 *     encode_rows_run(...): a run of rows events of one table and shape, as encode_rows or typed_rows
 *     json_variant(text) -> (value, metadata) or None: a JSON column's Variant (../_native/_json_variant.h)
 *
 * first / second are the images of one side as Arrow column parts, (ends, data, meta_ends, meta): int32 end
 * offsets and the bytes back to back, for the image (Variant value or UTF-8 JSON text) and, for Variant, its
 * metadata (None, None for JSON); second is None unless the event is an UPDATE.
 *
 * encode_rows decodes the row images of one rows event (data[pos:] holds them back to back: mysql-server
 * sql/rpl_record.cc unpack_row; docs/formats/mysql-binlog.md "Rows events"): per image a NULL bitmap over the PRESENT columns,
 * then the values of the present non-NULL columns. Each image becomes either compact JSON text (the text
 * spark_logsource.jsontext.to_json gives the row dict of rows.py) or a Spark Variant value (the bytes
 * spark_logsource.variant.encode_variant gives it; the metadata, which only depends on the image's key set, is
 * computed once per plan by encode_variant itself in rows_encode.py).
 *
 * Value layouts (the byte rules values.py implements; mysql-server sql/field.cc Field_*::pack, mysys/my_time.cc
 * my_datetime_packed_from_binary / my_time_packed_from_binary / my_timestamp_from_binary, strings/decimal.cc
 * bin2decimal), and the Python value each one is, which fixes its Variant / JSON form (variant.py and
 * jsontext.py docstrings):
 *   integers: little-endian 1/2/3/4/8 bytes, signed unless SIGNEDNESS says unsigned -> int;
 *   FLOAT (4 bytes, widened exactly) / DOUBLE (8) -> float; NEWDECIMAL -> Decimal with the column's scale;
 *   DATE (3 bytes LE: day 5 bits, month 4, year the rest) -> date, or "YYYY-MM-DD" when invalid;
 *   YEAR (1 byte, 0 or 1900 + v) -> int; DATETIME2 (5 bytes BE - 0x8000000000, + fraction) -> naive datetime or
 *   text; TIMESTAMP2 (4 bytes BE epoch seconds + fraction) -> UTC datetime, "0000-00-00 00:00:00[.0..]" for 0;
 *   TIME2 (3 + fraction bytes BE - bias, one signed number) -> "[-]HH:MM:SS[.f]"; old TIMESTAMP (u32 epoch),
 *   DATETIME (u64 YYYYMMDDhhmmss), TIME (3-byte signed HHMMSS);
 *   CHAR/VARCHAR/BLOB/TEXT (1-4 byte LE length + bytes) -> str in the column's charset, bytes when binary or
 *   when the bytes do not decode; GEOMETRY / VECTOR -> bytes; ENUM (1-2 bytes, 1-based index) / SET (1-8 bytes
 *   bitmask) -> names when known, else the integer; BIT (1-8 bytes BE) -> int; NULL-type columns -> None.
 *
 * Errors are those of rows.decode_rows_event for the same bytes, class, offset and message: a value that runs
 * past the data is a TruncatedDataError, at the value's start for the values values.py checks itself
 * (ValueTruncated) and at the row's start for those where Python's struct / indexing fails first; a DECIMAL
 * digit group out of range is a CorruptDataError at the value. Offsets are data_base + position (data_base
 * alone for the inflated block of a compressed event). Every length is checked against the bytes left before
 * it is used; output buffers grow through _buf.h, bounded by LS_BUF_MAX.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_native/_buf.h"
#include "../_native/_crc32.h"
#include "../_native/_encode.h"
#include "../_native/_text.h"
#include "_dates.h"
#include "_typed.h"

/* Value kinds and charset kinds: the K_* / CS_* constants of rows_encode.py. */
enum mk_kind {
    K_NULL, K_INT, K_FLOAT, K_DOUBLE, K_DECIMAL, K_DATE, K_YEAR, K_DATETIME2, K_TIMESTAMP2, K_TIME2,
    K_TIMESTAMP_OLD, K_DATETIME_OLD, K_TIME_OLD, K_TEXT, K_ENUM, K_SET, K_BIT, K_NKINDS
};
enum mk_charset { CS_UTF8, CS_BINARY, CS_TABLE, CS_CODEC };
enum { OP_INSERT, OP_UPDATE, OP_DELETE };

/* Variant header bytes (Spark common/variant/README.md): basic_type | type_id << 2. */

#define MAX_DECIMAL_DIGITS 256 /* precision is one metadata byte */

/* One present column of an image. */
typedef struct {
    int kind;
    int a, b, c;          /* kind arguments (see rows_encode._column_spec) */
    int row_start_trunc;  /* truncation reported at the row's start (Python's struct/indexing error) */
    const char *what;     /* name in truncation messages (owned by the plan's blob) */
    size_t nnames;        /* ENUM / SET names: offsets into the blob */
    size_t names_at;      /* index of the first name in plan->name_off / name_len */
    const char *codec;    /* CS_CODEC: Python codec name (blob) */
    int32_t *table;       /* CS_TABLE: code point of each byte, -1 = not decodable (owned) */
    size_t jkey_off, jkey_len; /* JSON member prefix "\"key\":" in the blob */
} mk_col;

typedef struct {
    Py_ssize_t n;          /* present columns */
    mk_col *cols;
    uint32_t *order;       /* sorted (variant field) position -> column index */
    size_t null_bytes;
    int keys_nonascii;     /* some JSON member prefix holds non-ASCII bytes */
    PyObject *metadata;    /* variant metadata of the key set (bytes) */
    size_t *name_off;
    uint32_t *name_len;
    ls_buf blob;           /* names, JSON key prefixes, what strings, codec names */
} mk_plan;

/* Decoding state of one encode_rows call. */
typedef struct {
    const uint8_t *data;
    size_t end;
    PyObject *path;
    long long data_base;
    int in_block;
    PyObject *label;
    Py_ssize_t nrows;      /* complete rows so far (error messages) */
    int json;
    int nonascii;          /* JSON text of the current row holds non-ASCII bytes */
    ls_buf vals;           /* variant: the values of the current row in column order */
    ls_buf spans;          /* variant: (start, len) size_t pairs into vals */
    ls_buf tmp;            /* text conversions */
} mk_ctx;

static PyObject *CorruptDataError;
static PyObject *TruncatedDataError;
static const char PLAN_CAPSULE[] = "spark_logsource.mysql._kernel.plan";

enum { MK_OK = 0, MK_ERR = -1 };

/* ---- errors ---------------------------------------------------------------------------------------------- */

static long long where(const mk_ctx *x, size_t p)
{
    return x->in_block ? x->data_base : x->data_base + (long long)p;
}

static int raise_data_error(PyObject *cls, mk_ctx *x, size_t p, PyObject *msg)
{
    if (msg == NULL)
        return MK_ERR;
    PyObject *off = PyLong_FromLongLong(where(x, p));
    if (off != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(cls, x->path, off, msg, NULL);
        if (exc != NULL) {
            PyErr_SetObject(cls, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(off);
    }
    Py_DECREF(msg);
    return MK_ERR;
}

/* rows.py: "row N of db.t cut short" at the row's start (IndexError / struct.error in values.py). */
static int trunc_row(mk_ctx *x, size_t row_start)
{
    return raise_data_error(TruncatedDataError, x, row_start,
                            PyUnicode_FromFormat("row %zd of %U cut short", x->nrows, x->label));
}

/* rows.py: "row N of db.t: WHAT cut short" at the value's start (ValueTruncated). */
static int trunc_value(mk_ctx *x, size_t pos, const char *what)
{
    return raise_data_error(TruncatedDataError, x, pos,
                            PyUnicode_FromFormat("row %zd of %U: %s cut short", x->nrows, x->label, what));
}

static int truncated(mk_ctx *x, const mk_col *col, size_t pos, size_t row_start)
{
    return col->row_start_trunc ? trunc_row(x, row_start) : trunc_value(x, pos, col->what);
}

static int nomem(void)
{
    PyErr_NoMemory();
    return MK_ERR;
}

/* ---- little emitters (variant value bytes or JSON text into b) --------------------------------------------- */

static inline uint64_t rd_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t rd_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* `width` decimal digits of v, zero-padded (v < 10**width). */
static inline void put_digits(uint8_t *dst, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        dst[i] = (uint8_t)('0' + v % 10);
        v /= 10;
    }
}

static int put_ascii(ls_buf *b, const char *s, size_t n)
{
    return ls_buf_put(b, s, n) ? nomem() : MK_OK;
}

static int var_int(ls_buf *b, int64_t v)
{
    return ls_variant_int(b, v) ? nomem() : MK_OK;
}

static int emit_int(mk_ctx *x, ls_buf *b, int64_t v)
{
    if (!x->json)
        return var_int(b, v);
    char num[24];
    return put_ascii(b, num, (size_t)i64_text(num, v));
}

static int emit_uint(mk_ctx *x, ls_buf *b, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return emit_int(x, b, (int64_t)v);
    if (x->json) {
        char num[24];
        return put_ascii(b, num, (size_t)u64_text(num, v));
    }
    /* Above int64: decimal16 with scale 0 (variant.py rule 2). */
    if (ls_buf_reserve(b, 18))
        return nomem();
    uint8_t *d = b->data + b->len;
    d[0] = VH_DECIMAL16;
    d[1] = 0;
    ls_put_le(d + 2, v, 8);
    memset(d + 10, 0, 8);
    b->len += 18;
    return MK_OK;
}

static int emit_double(mk_ctx *x, ls_buf *b, double v)
{
    if (!x->json) {
        uint64_t bits;
        memcpy(&bits, &v, 8);
        if (ls_buf_byte(b, VH_DOUBLE) || ls_buf_le(b, bits, 8))
            return nomem();
        return MK_OK;
    }
    int rc;
    if (isfinite(v))
        rc = put_float_repr(b, v);
    else
        rc = (ls_buf_byte(b, '"') || put_float_text(b, v) || ls_buf_byte(b, '"')) ? -1 : 0;
    return rc ? nomem() : MK_OK;
}

/* JSON string literal of valid UTF-8, escaped as json.encoder.encode_basestring does. */
static int json_string(mk_ctx *x, ls_buf *b, const uint8_t *s, size_t n)
{
    return ls_json_str(b, s, n, &x->nonascii) ? nomem() : MK_OK;
}

/* A str value given as valid UTF-8. */
static int emit_str(mk_ctx *x, ls_buf *b, const uint8_t *s, size_t n)
{
    if (x->json)
        return json_string(x, b, s, n);
    int rc = ls_variant_str(b, s, n);
    if (rc > 0)
        return PyErr_Format(PyExc_OverflowError, "string of %zu bytes is too long for a variant"), MK_ERR;
    return rc ? nomem() : MK_OK;
}

/* A bytes value: variant binary, or a JSON string of its base64. */
static int emit_bin(mk_ctx *x, ls_buf *b, const uint8_t *s, size_t n)
{
    if (x->json) {
        if (ls_buf_byte(b, '"') || put_base64(b, s, n) || ls_buf_byte(b, '"'))
            return nomem();
        return MK_OK;
    }
    if (n > 0xffffffffULL)
        return PyErr_Format(PyExc_OverflowError, "binary of %zu bytes is too long for a variant"), MK_ERR;
    if (ls_buf_byte(b, VH_BINARY) || ls_buf_le(b, n, 4) || ls_buf_put(b, s, n))
        return nomem();
    return MK_OK;
}

static int emit_null(mk_ctx *x, ls_buf *b)
{
    if (x->json)
        return put_ascii(b, "null", 4);
    return ls_buf_byte(b, VH_NULL) ? nomem() : MK_OK;
}

/* A str value that is ASCII text made here (dates, times, decimals as text). */
static int emit_text(mk_ctx *x, ls_buf *b, const char *s, int n)
{
    return n < 0 ? (PyErr_SetString(PyExc_SystemError, "text formatting failed"), MK_ERR)
                 : emit_str(x, b, (const uint8_t *)s, (size_t)n);
}

static int emit_date(mk_ctx *x, ls_buf *b, int64_t y, int m, int d)
{
    if (x->json) { /* y is 1..9999 (a valid date) */
        if (ls_buf_reserve(b, 12))
            return nomem();
        uint8_t *o = b->data + b->len;
        o[0] = '"';
        put_digits(o + 1, (uint64_t)y, 4);
        o[5] = '-';
        put_digits(o + 6, (uint64_t)m, 2);
        o[8] = '-';
        put_digits(o + 9, (uint64_t)d, 2);
        o[11] = '"';
        b->len += 12;
        return MK_OK;
    }
    if (ls_buf_byte(b, VH_DATE) || ls_buf_le(b, (uint64_t)days_from_civil(y, m, d), 4))
        return nomem();
    return MK_OK;
}

/* A datetime; `micros` since 1970-01-01 00:00 (UTC when aware). JSON: jsontext.datetime_text. */
static int emit_datetime(mk_ctx *x, ls_buf *b, int64_t micros, int aware)
{
    if (!x->json) {
        if (ls_buf_byte(b, aware ? VH_TIMESTAMP : VH_TIMESTAMP_NTZ) || ls_buf_le(b, (uint64_t)micros, 8))
            return nomem();
        return MK_OK;
    }
    int64_t days = floor_div(micros, 86400000000LL);
    int64_t rest = micros - days * 86400000000LL;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int64_t secs = rest / 1000000;
    if (y < 0 || y > 9999) { /* not from a valid datetime: keep printf's sign and width rules */
        char s[80];
        int n = snprintf(s, sizeof s, "\"%04lld-%02d-%02dT%02d:%02d:%02d.%06d%s\"", (long long)y, m, d,
                         (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60), (int)(rest % 1000000),
                         aware ? "Z" : "");
        return put_ascii(b, s, (size_t)n);
    }
    if (ls_buf_reserve(b, 29))
        return nomem();
    uint8_t *o = b->data + b->len;
    o[0] = '"';
    put_digits(o + 1, (uint64_t)y, 4);
    o[5] = '-';
    put_digits(o + 6, (uint64_t)m, 2);
    o[8] = '-';
    put_digits(o + 9, (uint64_t)d, 2);
    o[11] = 'T';
    put_digits(o + 12, (uint64_t)(secs / 3600), 2);
    o[14] = ':';
    put_digits(o + 15, (uint64_t)(secs / 60 % 60), 2);
    o[17] = ':';
    put_digits(o + 18, (uint64_t)(secs % 60), 2);
    o[20] = '.';
    put_digits(o + 21, (uint64_t)(rest % 1000000), 6);
    size_t n = 27;
    if (aware)
        o[n++] = 'Z';
    o[n++] = '"';
    b->len += n;
    return MK_OK;
}

/* values._fraction_text: "" or "." + (us // 10**(6-fsp)) zero-padded to fsp digits (more if it is larger). */
static int fraction_text(char *s, size_t cap, int64_t us, int fsp)
{
    static const int64_t div[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};
    if (!fsp) {
        s[0] = 0;
        return 0;
    }
    return snprintf(s, cap, ".%0*lld", fsp, (long long)(us / div[fsp]));
}

/* values.make_datetime's text for an invalid datetime: "YYYY-MM-DD hh:mm:ss[.f]" (Python %0Nd padding). */
static int emit_datetime_text(mk_ctx *x, ls_buf *b, int64_t y, int64_t mo, int64_t d, int64_t hh, int64_t mi,
                              int64_t ss, int64_t us, int fsp)
{
    char frac[32], s[160];
    fraction_text(frac, sizeof frac, us, fsp);
    int n = snprintf(s, sizeof s, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld%s", (long long)y, (long long)mo,
                     (long long)d, (long long)hh, (long long)mi, (long long)ss, frac);
    return emit_text(x, b, s, n);
}

static int emit_datetime_value(mk_ctx *x, ls_buf *b, int64_t y, int64_t mo, int64_t d, int64_t hh, int64_t mi,
                               int64_t ss, int64_t us, int fsp)
{
    if (!datetime_valid(y, mo, d, hh, mi, ss, us))
        return emit_datetime_text(x, b, y, mo, d, hh, mi, ss, us, fsp);
    int64_t micros = ((days_from_civil(y, (int)mo, (int)d) * 86400 + hh * 3600 + mi * 60 + ss) * 1000000) + us;
    return emit_datetime(x, b, micros, 0);
}

/* values.time_text: "[-]HH:MM:SS[.f]". */
static int emit_time_text(mk_ctx *x, ls_buf *b, int negative, int64_t hh, int64_t mi, int64_t ss, int64_t us,
                          int fsp)
{
    char frac[32], s[128];
    fraction_text(frac, sizeof frac, us, fsp);
    int n = snprintf(s, sizeof s, "%s%02lld:%02lld:%02lld%s", negative ? "-" : "", (long long)hh, (long long)mi,
                     (long long)ss, frac);
    return emit_text(x, b, s, n);
}

/* ---- DECIMAL (strings/decimal.cc bin2decimal; values.decode_decimal_bytes) --------------------------------- */

static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

/* Append `ndig` digits of one group to dst; 0 or -1 when the group is out of range. */
static int decimal_group(const uint8_t *p, int nbytes, int ndig, char *dst)
{
    uint32_t v = (uint32_t)rd_be(p, nbytes);
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
static int decimal_digits(const uint8_t *src, int size, int precision, int scale, char *digits, int *neg)
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

/* str(Decimal) of sign, digits D (no leading zeros) and exponent -scale (Python's to-sci-string). */
static int decimal_text(char *s, int neg, const char *digits, int ndig, int scale)
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

static int emit_decimal(mk_ctx *x, ls_buf *b, const mk_col *col, const uint8_t *p, size_t pos)
{
    char digits[MAX_DECIMAL_DIGITS + 8];
    char text[2 * MAX_DECIMAL_DIGITS + 32];
    int neg;
    int scale = col->b;
    int ndig = decimal_digits(p, col->c, col->a, scale, digits, &neg);
    if (ndig < 0)
        return raise_data_error(CorruptDataError, x, pos,
                                PyUnicode_FromFormat("row %zd of %U: DECIMAL: decimal digit group out of range",
                                                     x->nrows, x->label));
    if (x->json) {
        int n = decimal_text(text, neg, digits, ndig, scale);
        return put_ascii(b, text, (size_t)n);
    }
    int precision = ndig > scale ? ndig : scale;
    if (precision > 38) {
        int n = decimal_text(text, neg, digits, ndig, scale);
        return emit_str(x, b, (const uint8_t *)text, (size_t)n);
    }
    __int128 v = 0;
    for (int i = 0; i < ndig; i++)
        v = v * 10 + (digits[i] - '0');
    if (neg)
        v = -v;
    if (ls_buf_reserve(b, 18))
        return nomem();
    uint8_t *d = b->data + b->len;
    d[1] = (uint8_t)scale;
    if (precision <= 9) {
        d[0] = VH_DECIMAL4;
        ls_put_le(d + 2, (uint64_t)(int64_t)v, 4);
        b->len += 6;
    } else if (precision <= 18) {
        d[0] = VH_DECIMAL8;
        ls_put_le(d + 2, (uint64_t)(int64_t)v, 8);
        b->len += 10;
    } else {
        d[0] = VH_DECIMAL16;
        unsigned __int128 u = (unsigned __int128)v;
        ls_put_le(d + 2, (uint64_t)u, 8);
        ls_put_le(d + 10, (uint64_t)(u >> 64), 8);
        b->len += 18;
    }
    return MK_OK;
}

/* ---- text in a charset (values._text_converter) ------------------------------------------------------------ */

static int emit_charset_text(mk_ctx *x, ls_buf *b, const mk_col *col, const uint8_t *s, size_t n)
{
    int ascii;
    switch (col->b) {
    case CS_UTF8:
        return utf8_valid(s, n, &ascii) ? emit_str(x, b, s, n) : emit_bin(x, b, s, n);
    case CS_BINARY:
        return emit_bin(x, b, s, n);
    case CS_TABLE: {
        const int32_t *t = col->table;
        for (size_t i = 0; i < n; i++)
            if (t[s[i]] < 0)
                return emit_bin(x, b, s, n);
        if (n > LS_BUF_MAX / 3)
            return nomem();
        x->tmp.len = 0;
        if (ls_buf_reserve(&x->tmp, 3 * n))
            return nomem();
        uint8_t *d = x->tmp.data;
        for (size_t i = 0; i < n; i++) {
            uint32_t cp = (uint32_t)t[s[i]];
            if (cp < 0x80) {
                *d++ = (uint8_t)cp;
            } else if (cp < 0x800) {
                *d++ = (uint8_t)(0xc0 | (cp >> 6));
                *d++ = (uint8_t)(0x80 | (cp & 0x3f));
            } else {
                *d++ = (uint8_t)(0xe0 | (cp >> 12));
                *d++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
                *d++ = (uint8_t)(0x80 | (cp & 0x3f));
            }
        }
        return emit_str(x, b, x->tmp.data, (size_t)(d - x->tmp.data));
    }
    default: { /* CS_CODEC: CPython's codec, bytes when it refuses them */
        if (n > PY_SSIZE_T_MAX)
            return nomem();
        PyObject *text = PyUnicode_Decode((const char *)s, (Py_ssize_t)n, col->codec, "strict");
        if (text == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                return MK_ERR;
            PyErr_Clear();
            return emit_bin(x, b, s, n);
        }
        Py_ssize_t len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
        int rc = utf8 == NULL ? MK_ERR : emit_str(x, b, (const uint8_t *)utf8, (size_t)len);
        Py_DECREF(text);
        return rc;
    }
    }
}

/* ---- one value ----------------------------------------------------------------------------------------------- */

/* Decode the value of `col` at *pos into b; *pos moves past it. */
static int emit_value(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, size_t *pos, size_t row_start)
{
    const uint8_t *data = x->data;
    size_t p = *pos;
    size_t left = x->end - p;
    const uint8_t *v = data + p;
    switch (col->kind) {
    case K_NULL:
        return emit_null(x, b);
    case K_INT: {
        int w = col->a;
        if (left < (size_t)w)
            return truncated(x, col, p, row_start);
        *pos = p + (size_t)w;
        uint64_t u = rd_le(v, w);
        if (!col->b)
            return emit_uint(x, b, u);
        int shift = 64 - 8 * w;
        return emit_int(x, b, (int64_t)(u << shift) >> shift);
    }
    case K_FLOAT: {
        if (left < 4)
            return truncated(x, col, p, row_start);
        *pos = p + 4;
        uint32_t bits = (uint32_t)rd_le(v, 4);
        float f;
        memcpy(&f, &bits, 4);
        return emit_double(x, b, (double)f);
    }
    case K_DOUBLE: {
        if (left < 8)
            return truncated(x, col, p, row_start);
        *pos = p + 8;
        uint64_t bits = rd_le(v, 8);
        double d;
        memcpy(&d, &bits, 8);
        return emit_double(x, b, d);
    }
    case K_DECIMAL:
        if (left < (size_t)col->c)
            return truncated(x, col, p, row_start);
        *pos = p + (size_t)col->c;
        return emit_decimal(x, b, col, v, p);
    case K_DATE: {
        if (left < 3)
            return truncated(x, col, p, row_start);
        *pos = p + 3;
        uint32_t d = (uint32_t)rd_le(v, 3);
        int64_t year = d >> 9;
        int month = (int)((d >> 5) & 15), day = (int)(d & 31);
        if (date_valid(year, month, day))
            return emit_date(x, b, year, month, day);
        char s[48];
        return emit_text(x, b, s, snprintf(s, sizeof s, "%04d-%02d-%02d", (int)year, month, day));
    }
    case K_YEAR:
        if (left < 1)
            return truncated(x, col, p, row_start);
        *pos = p + 1;
        return emit_int(x, b, v[0] ? 1900 + v[0] : 0);
    case K_DATETIME2: {
        int fsp = col->a, fb = (fsp + 1) / 2;
        if (left < (size_t)(5 + fb))
            return truncated(x, col, p, row_start);
        *pos = p + 5 + (size_t)fb;
        static const int64_t scale[4] = {0, 10000, 100, 1};
        int64_t intpart = (int64_t)rd_be(v, 5) - 0x8000000000LL;
        int64_t frac = fb ? (int64_t)rd_be(v + 5, fb) * scale[fb] : 0;
        int64_t ymd = intpart >> 17, hms = intpart & 0x1FFFF;
        int64_t ym = ymd >> 5;
        return emit_datetime_value(x, b, floor_div(ym, 13), floor_mod(ym, 13), ymd & 31, hms >> 12, (hms >> 6) & 63,
                                   hms & 63, frac, fsp);
    }
    case K_TIMESTAMP2: {
        int fsp = col->a, fb = (fsp + 1) / 2;
        if (left < (size_t)(4 + fb))
            return truncated(x, col, p, row_start);
        *pos = p + 4 + (size_t)fb;
        static const int64_t scale[4] = {0, 10000, 100, 1};
        int64_t seconds = (int64_t)rd_be(v, 4);
        int64_t frac = fb ? (int64_t)rd_be(v + 4, fb) * scale[fb] : 0;
        if (seconds == 0 && frac == 0) {
            char s[48], f[32];
            fraction_text(f, sizeof f, 0, fsp);
            return emit_text(x, b, s, snprintf(s, sizeof s, "0000-00-00 00:00:00%s", f));
        }
        return emit_datetime(x, b, seconds * 1000000 + frac, 1);
    }
    case K_TIME2: {
        int fsp = col->a, fb = (fsp + 1) / 2;
        if (left < (size_t)(3 + fb))
            return truncated(x, col, p, row_start);
        *pos = p + 3 + (size_t)fb;
        static const int64_t scale[4] = {0, 10000, 100, 1};
        int fbits = 8 * fb;
        int64_t value = (int64_t)rd_be(v, 3 + fb) - ((int64_t)0x800000 << fbits);
        int negative = value < 0;
        if (negative)
            value = -value;
        int64_t hms = value >> fbits;
        int64_t frac = (value & (((int64_t)1 << fbits) - 1)) * scale[fb];
        return emit_time_text(x, b, negative, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63, frac, fsp);
    }
    case K_TIMESTAMP_OLD: {
        if (left < 4)
            return truncated(x, col, p, row_start);
        *pos = p + 4;
        int64_t seconds = (int64_t)rd_le(v, 4);
        if (seconds == 0)
            return emit_text(x, b, "0000-00-00 00:00:00", 19);
        return emit_datetime(x, b, seconds * 1000000, 1);
    }
    case K_DATETIME_OLD: {
        if (left < 8)
            return truncated(x, col, p, row_start);
        *pos = p + 8;
        uint64_t u = rd_le(v, 8);
        uint64_t d = u / 1000000, t = u % 1000000;
        /* Every part fits int64 (d < 2**44). */
        return emit_datetime_value(x, b, (int64_t)(d / 10000), (int64_t)(d / 100 % 100), (int64_t)(d % 100),
                                   (int64_t)(t / 10000), (int64_t)(t / 100 % 100), (int64_t)(t % 100), 0, 0);
    }
    case K_TIME_OLD: {
        if (left < 3)
            return truncated(x, col, p, row_start);
        *pos = p + 3;
        int64_t t = (int64_t)(rd_le(v, 3) << 40) >> 40;
        int negative = t < 0;
        if (negative)
            t = -t;
        return emit_time_text(x, b, negative, t / 10000, t / 100 % 100, t % 100, 0, 0);
    }
    case K_TEXT: {
        int w = col->a;
        if (left < (size_t)w)
            return (w == 1) ? trunc_row(x, row_start) : trunc_value(x, p, col->what);
        uint64_t n = rd_le(v, w);
        if (n > left - (size_t)w)
            return trunc_value(x, p, col->what);
        *pos = p + (size_t)w + (size_t)n;
        return emit_charset_text(x, b, col, v + w, (size_t)n);
    }
    case K_ENUM: {
        int w = col->a;
        if (left < (size_t)w)
            return trunc_row(x, row_start);
        *pos = p + (size_t)w;
        uint64_t index = rd_le(v, w);
        if (col->nnames || col->c) { /* names known (c = 1 marks an empty name list) */
            if (index == 0)
                return emit_str(x, b, (const uint8_t *)"", 0);
            if (index <= col->nnames) {
                size_t k = col->names_at + (size_t)index - 1;
                return emit_str(x, b, plan->blob.data + plan->name_off[k], plan->name_len[k]);
            }
        }
        return emit_int(x, b, (int64_t)index);
    }
    case K_SET: {
        int w = col->a;
        if (left < (size_t)w)
            return truncated(x, col, p, row_start);
        *pos = p + (size_t)w;
        uint64_t mask = rd_le(v, w);
        if ((col->nnames || col->c) && (col->nnames >= 64 || mask < ((uint64_t)1 << col->nnames))) {
            x->tmp.len = 0;
            int first = 1;
            for (size_t bit = 0; bit < col->nnames && bit < 64; bit++) {
                if (!(mask >> bit & 1))
                    continue;
                size_t k = col->names_at + bit;
                if ((!first && ls_buf_byte(&x->tmp, ',')) ||
                    ls_buf_put(&x->tmp, plan->blob.data + plan->name_off[k], plan->name_len[k]))
                    return nomem();
                first = 0;
            }
            return emit_str(x, b, x->tmp.data, x->tmp.len);
        }
        return emit_uint(x, b, mask);
    }
    case K_BIT: {
        int w = col->a;
        if (left < (size_t)w)
            return truncated(x, col, p, row_start);
        *pos = p + (size_t)w;
        return emit_uint(x, b, rd_be(v, w));
    }
    default:
        PyErr_Format(PyExc_SystemError, "unknown value kind %d", col->kind);
        return MK_ERR;
    }
}

/* ---- one image ---------------------------------------------------------------------------------------------- */

/* Variant object of the current row, appended to o: values from x->vals/x->spans laid out in key order. */
static int assemble_object(mk_ctx *x, const mk_plan *plan, ls_buf *o)
{
    size_t m = (size_t)plan->n;
    const size_t *spans = (const size_t *)x->spans.data;
    uint64_t total = x->vals.len;
    int os = ls_size_of(total);
    int is = ls_size_of(m ? m - 1 : 0);
    if (os == 0)
        return PyErr_Format(PyExc_OverflowError, "row image of %llu bytes is too large for a variant",
                            (unsigned long long)total), MK_ERR;
    size_t head = ls_variant_head_size(m, is, os);
    size_t base = o->len;
    if (ls_buf_reserve(o, head + total))
        return nomem();
    uint8_t *h = o->data + base;
    uint8_t *ids = ls_variant_head_at(h, m, is, os);
    uint8_t *offs = ids + m * (size_t)is;
    uint8_t *vals = h + head;
    size_t off = 0;
    for (size_t i = 0; i < m; i++) {
        ls_put_le(ids + i * (size_t)is, i, is);
        ls_put_le(offs + i * (size_t)os, off, os);
        uint32_t j = plan->order[i];
        size_t start = spans[2 * j], len = spans[2 * j + 1];
        memcpy(vals + off, x->vals.data + start, len);
        off += len;
    }
    ls_put_le(offs + m * (size_t)os, off, os);
    o->len = base + head + total;
    return MK_OK;
}

/* Decode one image at *pos and append its encoding to o. */
static int encode_image(mk_ctx *x, const mk_plan *plan, size_t *pos, size_t row_start, ls_buf *o)
{
    size_t p = *pos;
    Py_ssize_t m = plan->n;
    if (plan->null_bytes > x->end - p)
        return trunc_value(x, p, "row NULL bitmap");
    const uint8_t *nulls = x->data + p;
    p += plan->null_bytes;
    if (x->json) {
        x->nonascii = plan->keys_nonascii;
        if (ls_buf_byte(o, '{'))
            return nomem();
        for (Py_ssize_t j = 0; j < m; j++) {
            const mk_col *col = &plan->cols[j];
            if ((j && ls_buf_byte(o, ',')) || ls_buf_put(o, plan->blob.data + col->jkey_off, col->jkey_len))
                return nomem();
            int rc = (nulls[j >> 3] >> (j & 7) & 1) ? emit_null(x, o) : emit_value(x, o, plan, col, &p, row_start);
            if (rc)
                return rc;
        }
        if (ls_buf_byte(o, '}'))
            return nomem();
        *pos = p;
        return MK_OK;
    }
    x->vals.len = 0;
    x->spans.len = 0;
    if (ls_buf_reserve(&x->spans, 2 * sizeof(size_t) * (size_t)m))
        return nomem();
    size_t *spans = (size_t *)x->spans.data;
    for (Py_ssize_t j = 0; j < m; j++) {
        size_t start = x->vals.len;
        const mk_col *col = &plan->cols[j];
        int rc = (nulls[j >> 3] >> (j & 7) & 1) ? emit_null(x, &x->vals) : emit_value(x, &x->vals, plan, col, &p,
                                                                                      row_start);
        if (rc)
            return rc;
        spans[2 * j] = start;
        spans[2 * j + 1] = x->vals.len - start;
    }
    *pos = p;
    return assemble_object(x, plan, o);
}

/* ---- plans ------------------------------------------------------------------------------------------------- */

static void plan_free(mk_plan *plan)
{
    if (plan == NULL)
        return;
    if (plan->cols != NULL)
        for (Py_ssize_t j = 0; j < plan->n; j++)
            PyMem_Free(plan->cols[j].table);
    PyMem_Free(plan->cols);
    PyMem_Free(plan->order);
    PyMem_Free(plan->name_off);
    PyMem_Free(plan->name_len);
    Py_XDECREF(plan->metadata);
    ls_buf_free(&plan->blob);
    PyMem_Free(plan);
}

static void plan_capsule_destructor(PyObject *capsule)
{
    plan_free((mk_plan *)PyCapsule_GetPointer(capsule, PLAN_CAPSULE));
}

/* Append a NUL-terminated copy of s to the blob; returns its offset or (size_t)-1. */
static size_t blob_str(ls_buf *blob, const char *s, size_t n)
{
    size_t at = blob->len;
    if (ls_buf_put(blob, s, n) || ls_buf_byte(blob, 0))
        return (size_t)-1;
    return at;
}

/* Columns whose truncation rows.py reports at the row's start (struct.error / IndexError in values.py). */
static int truncates_at_row_start(int kind, int width)
{
    switch (kind) {
    case K_INT:
        return width != 3;
    case K_FLOAT:
    case K_DOUBLE:
    case K_YEAR:
    case K_TIMESTAMP_OLD:
    case K_DATETIME_OLD:
    case K_ENUM:
        return 1;
    default:
        return 0;
    }
}

static int long_item(PyObject *tuple, Py_ssize_t i, int lo, int hi, int *out)
{
    long v = PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "plan item %zd = %ld is outside %d..%d", i, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Fill plan->cols[j] from spec (kind, a, b, c, names, codec, table, what); deferred offsets fixed later. */
static int plan_column(mk_plan *plan, Py_ssize_t j, PyObject *spec, PyObject *json_key, size_t *what_off,
                       size_t *codec_off, PyObject **names_out)
{
    mk_col *col = &plan->cols[j];
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 8) {
        PyErr_SetString(PyExc_TypeError, "a column spec is an 8-tuple");
        return -1;
    }
    if (long_item(spec, 0, 0, K_NKINDS - 1, &col->kind) || long_item(spec, 1, 0, 255, &col->a) ||
        long_item(spec, 2, 0, 255, &col->b) || long_item(spec, 3, 0, MAX_DECIMAL_DIGITS, &col->c))
        return -1;
    if (col->kind == K_INT && col->a != 1 && col->a != 2 && col->a != 3 && col->a != 4 && col->a != 8)
        return PyErr_Format(PyExc_ValueError, "integer width %d", col->a), -1;
    if (col->kind == K_TEXT && (col->a < 1 || col->a > 4 || col->b > CS_CODEC))
        return PyErr_Format(PyExc_ValueError, "text prefix %d / charset %d", col->a, col->b), -1;
    if ((col->kind == K_ENUM && col->a != 1 && col->a != 2) || ((col->kind == K_SET || col->kind == K_BIT) &&
                                                                col->a > 8) || (col->kind == K_SET && col->a < 1))
        return PyErr_Format(PyExc_ValueError, "ENUM/SET/BIT width %d", col->a), -1;
    if (col->kind == K_DECIMAL) {
        int precision = col->a, scale = col->b;
        if (precision < 1 || scale > precision)
            return PyErr_Format(PyExc_ValueError, "DECIMAL(%d,%d)", precision, scale), -1;
        int intg = precision - scale;
        int size = (intg / 9) * 4 + DIG2BYTES[intg % 9] + (scale / 9) * 4 + DIG2BYTES[scale % 9];
        if (size != col->c)
            return PyErr_Format(PyExc_ValueError, "DECIMAL size %d, expected %d", col->c, size), -1;
    }
    if ((col->kind == K_DATETIME2 || col->kind == K_TIMESTAMP2 || col->kind == K_TIME2) && col->a > 6)
        return PyErr_Format(PyExc_ValueError, "fsp %d", col->a), -1;
    col->row_start_trunc = truncates_at_row_start(col->kind, col->a);
    PyObject *names = PyTuple_GET_ITEM(spec, 4);
    PyObject *codec = PyTuple_GET_ITEM(spec, 5);
    PyObject *table = PyTuple_GET_ITEM(spec, 6);
    PyObject *what = PyTuple_GET_ITEM(spec, 7);
    Py_ssize_t wlen;
    const char *wtext = PyUnicode_AsUTF8AndSize(what, &wlen);
    if (wtext == NULL)
        return -1;
    *what_off = blob_str(&plan->blob, wtext, (size_t)wlen);
    *codec_off = (size_t)-1;
    if (col->kind == K_TEXT && col->b == CS_CODEC) {
        Py_ssize_t clen;
        const char *ctext = PyUnicode_AsUTF8AndSize(codec, &clen);
        if (ctext == NULL)
            return -1;
        *codec_off = blob_str(&plan->blob, ctext, (size_t)clen);
    }
    if (col->kind == K_TEXT && col->b == CS_TABLE) {
        if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 256)
            return PyErr_SetString(PyExc_TypeError, "a byte table is a 256-tuple"), -1;
        col->table = PyMem_Malloc(256 * sizeof(int32_t));
        if (col->table == NULL)
            return nomem();
        for (Py_ssize_t i = 0; i < 256; i++) {
            long cp = PyLong_AsLong(PyTuple_GET_ITEM(table, i));
            if (cp == -1 && PyErr_Occurred())
                return -1;
            if (cp < -1 || cp > 0xffff || (cp >= 0xd800 && cp <= 0xdfff))
                return PyErr_Format(PyExc_ValueError, "code point %ld in a byte table", cp), -1;
            col->table[i] = (int32_t)cp;
        }
    }
    *names_out = (col->kind == K_ENUM || col->kind == K_SET) && names != Py_None ? names : NULL;
    if (*names_out != NULL && !PyTuple_Check(names))
        return PyErr_SetString(PyExc_TypeError, "ENUM/SET names are a tuple of bytes"), -1;
    const char *key;
    Py_ssize_t klen;
    if (PyBytes_AsStringAndSize(json_key, (char **)&key, &klen))
        return -1;
    col->jkey_off = plan->blob.len;
    col->jkey_len = (size_t)klen;
    for (Py_ssize_t i = 0; i < klen; i++)
        plan->keys_nonascii |= ((unsigned char)key[i] & 0x80) != 0;
    if (ls_buf_put(&plan->blob, key, (size_t)klen))
        return nomem();
    if (*what_off == (size_t)-1)
        return nomem();
    return 0;
}

static PyObject *compile_plan(PyObject *self, PyObject *args)
{
    PyObject *specs, *order, *metadata, *json_keys;
    if (!PyArg_ParseTuple(args, "O!O!SO!:compile_plan", &PyList_Type, &specs, &PyList_Type, &order, &metadata,
                          &PyList_Type, &json_keys))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(specs);
    if (PyList_GET_SIZE(order) != m || PyList_GET_SIZE(json_keys) != m)
        return PyErr_Format(PyExc_ValueError, "%zd specs, %zd order entries, %zd keys", m, PyList_GET_SIZE(order),
                            PyList_GET_SIZE(json_keys));
    if (m > 0xffffff)
        return PyErr_Format(PyExc_ValueError, "%zd columns", m);
    mk_plan *plan = PyMem_Calloc(1, sizeof(mk_plan));
    if (plan == NULL)
        return PyErr_NoMemory();
    size_t *what_offs = PyMem_Calloc((size_t)m + 1, sizeof(size_t));
    size_t *codec_offs = PyMem_Calloc((size_t)m + 1, sizeof(size_t));
    plan->n = m;
    plan->cols = PyMem_Calloc((size_t)m + 1, sizeof(mk_col));
    plan->order = PyMem_Calloc((size_t)m + 1, sizeof(uint32_t));
    plan->null_bytes = ((size_t)m + 7) / 8;
    Py_INCREF(metadata);
    plan->metadata = metadata;
    if (what_offs == NULL || codec_offs == NULL || plan->cols == NULL || plan->order == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* Names: count first. */
    size_t total_names = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *spec = PyList_GET_ITEM(specs, j);
        if (PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 8 && PyTuple_Check(PyTuple_GET_ITEM(spec, 4)))
            total_names += (size_t)PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 4));
    }
    plan->name_off = PyMem_Calloc(total_names + 1, sizeof(size_t));
    plan->name_len = PyMem_Calloc(total_names + 1, sizeof(uint32_t));
    if (plan->name_off == NULL || plan->name_len == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    size_t name_at = 0;
    char *seen = PyMem_Calloc((size_t)m + 1, 1);
    if (seen == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *names = NULL;
        PyObject *key = PyList_GET_ITEM(json_keys, j);
        if (!PyBytes_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "JSON keys are bytes");
            PyMem_Free(seen);
            goto fail;
        }
        if (plan_column(plan, j, PyList_GET_ITEM(specs, j), key, &what_offs[j], &codec_offs[j], &names)) {
            PyMem_Free(seen);
            goto fail;
        }
        mk_col *col = &plan->cols[j];
        col->names_at = name_at;
        if (names != NULL) {
            Py_ssize_t k = PyTuple_GET_SIZE(names);
            col->nnames = (size_t)k;
            col->c = 1; /* names are known, even when there are none */
            for (Py_ssize_t i = 0; i < k; i++) {
                char *s;
                Py_ssize_t len;
                if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(names, i), &s, &len)) {
                    PyMem_Free(seen);
                    goto fail;
                }
                if ((uint64_t)len > UINT32_MAX) {
                    PyErr_SetString(PyExc_ValueError, "name too long");
                    PyMem_Free(seen);
                    goto fail;
                }
                plan->name_off[name_at] = plan->blob.len;
                plan->name_len[name_at] = (uint32_t)len;
                name_at++;
                if (ls_buf_put(&plan->blob, s, (size_t)len)) {
                    PyErr_NoMemory();
                    PyMem_Free(seen);
                    goto fail;
                }
            }
        } else if (col->kind == K_ENUM || col->kind == K_SET) {
            col->c = 0;
        }
        long o = PyLong_AsLong(PyList_GET_ITEM(order, j));
        if ((o == -1 && PyErr_Occurred()) || o < 0 || o >= m || seen[o]) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "order is not a permutation");
            PyMem_Free(seen);
            goto fail;
        }
        seen[o] = 1;
        plan->order[j] = (uint32_t)o;
    }
    PyMem_Free(seen);
    /* The blob no longer moves: resolve string pointers. */
    for (Py_ssize_t j = 0; j < m; j++) {
        plan->cols[j].what = (const char *)plan->blob.data + what_offs[j];
        if (codec_offs[j] != (size_t)-1)
            plan->cols[j].codec = (const char *)plan->blob.data + codec_offs[j];
    }
    PyMem_Free(what_offs);
    PyMem_Free(codec_offs);
    PyObject *capsule = PyCapsule_New(plan, PLAN_CAPSULE, plan_capsule_destructor);
    if (capsule == NULL)
        plan_free(plan);
    return capsule;
fail:
    PyMem_Free(what_offs);
    PyMem_Free(codec_offs);
    plan_free(plan);
    return NULL;
}

/* ---- encode_rows ----------------------------------------------------------------------------------------------- */

/* One side's output as Arrow column parts (rows_encode.ImageColumn): the int32 end offset of each image and the
 * images back to back (Variant values or UTF-8 JSON text); for Variant also each image's metadata, the same way.
 * No Python object per row: the event's images leave as four bytes objects. */
typedef struct {
    ls_buf ends, data, meta_ends, meta;
} side;

static void side_clear(side *s)
{
    ls_buf_free(&s->ends);
    ls_buf_free(&s->data);
    ls_buf_free(&s->meta_ends);
    ls_buf_free(&s->meta);
}

/* The end offset of the image just written to data (int32: one Arrow binary/string column holds < 2 GiB). */
static int put_end(ls_buf *ends, const ls_buf *data)
{
    if (data->len > (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the row images of one rows event exceed 2 GiB");
        return -1;
    }
    int32_t end = (int32_t)data->len;
    return ls_buf_put(ends, &end, sizeof end) ? nomem() : 0;
}

/* Decode and encode one image at *pos into the side: its bytes, its end offset, its metadata (Variant). */
static int side_image(mk_ctx *x, side *s, const mk_plan *plan, size_t *pos, size_t row_start)
{
    if (encode_image(x, plan, pos, row_start, &s->data) || put_end(&s->ends, &s->data))
        return -1;
    if (x->json)
        return 0;
    if (ls_buf_put(&s->meta, PyBytes_AS_STRING(plan->metadata), (size_t)PyBytes_GET_SIZE(plan->metadata)))
        return nomem();
    return put_end(&s->meta_ends, &s->meta);
}

static PyObject *buf_bytes(const ls_buf *b)
{
    return PyBytes_FromStringAndSize(b->len ? (const char *)b->data : "", (Py_ssize_t)b->len);
}

/* (ends, data, meta_ends, meta); the last two None for JSON. */
static PyObject *side_result(const side *s, int json)
{
    if (json)
        return Py_BuildValue("(NNOO)", buf_bytes(&s->ends), buf_bytes(&s->data), Py_None, Py_None);
    return Py_BuildValue("(NNNN)", buf_bytes(&s->ends), buf_bytes(&s->data), buf_bytes(&s->meta_ends),
                         buf_bytes(&s->meta));
}

/* (first, second) as side_result gives them, second None unless the op is an UPDATE; NULL on error. */
static PyObject *sides_result(const side *first, const side *second, int op, int json)
{
    PyObject *a = side_result(first, json);
    PyObject *b = a == NULL ? NULL : (op == OP_UPDATE ? side_result(second, json) : Py_NewRef(Py_None));
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

/* The decoding state of one event's row data: the buffer, and what its errors name. */
static void ctx_init(mk_ctx *x, const Py_buffer *view, PyObject *path, long long data_base, int in_block,
                     PyObject *label)
{
    x->data = view->buf;
    x->end = (size_t)view->len;
    x->path = path;
    x->data_base = data_base;
    x->in_block = in_block;
    x->label = label;
}

/* The decoding state's buffers, released. */
static void ctx_clear(mk_ctx *x)
{
    ls_buf_free(&x->vals);
    ls_buf_free(&x->spans);
    ls_buf_free(&x->tmp);
}

/* What an encode call owns, released. */
static void encode_clear(mk_ctx *x, side *first, side *second)
{
    side_clear(first);
    side_clear(second);
    ctx_clear(x);
}

static mk_plan *get_plan(PyObject *capsule)
{
    return (mk_plan *)PyCapsule_GetPointer(capsule, PLAN_CAPSULE);
}

/* The rows of one event's row data from *pos to x->end, appended to the sides (x->nrows counts them). */
static int encode_event_rows(mk_ctx *x, side *first, side *second, const mk_plan *plan, const mk_plan *plan_after,
                             int op, size_t pos)
{
    while (pos < x->end) {
        size_t row_start = pos;
        if (side_image(x, first, plan, &pos, row_start))
            return -1;
        if (op == OP_UPDATE && side_image(x, second, plan_after, &pos, row_start))
            return -1;
        if (pos == row_start) { /* no column present: the row would repeat forever */
            return raise_data_error(CorruptDataError, x, row_start,
                                    PyUnicode_FromFormat("row %zd of %U: row image without columns", x->nrows,
                                                         x->label));
        }
        x->nrows++;
    }
    return 0;
}

static PyObject *encode_rows(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    PyObject *cap_before, *cap_after, *path, *label;
    int op, as_json, in_block;
    long long data_base;
    if (!PyArg_ParseTuple(args, "y*nOOipOLpU:encode_rows", &view, &start, &cap_before, &cap_after, &op, &as_json,
                          &path, &data_base, &in_block, &label))
        return NULL;
    PyObject *result = NULL;
    mk_ctx x = {0};
    side first = {0}, second = {0};
    mk_plan *plan = get_plan(cap_before);
    mk_plan *plan_after = plan ? get_plan(cap_after) : NULL;
    if (plan == NULL || plan_after == NULL)
        goto done;
    if (op < OP_INSERT || op > OP_DELETE || start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "bad op or start position");
        goto done;
    }
    ctx_init(&x, &view, path, data_base, in_block, label);
    x.json = as_json;
    if (encode_event_rows(&x, &first, &second, plan, plan_after, op, (size_t)start))
        goto done;
    {
        PyObject *sides = sides_result(&first, &second, op, as_json);
        if (sides != NULL) {
            result = Py_BuildValue("(nOO)", x.nrows, PyTuple_GET_ITEM(sides, 0), PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    encode_clear(&x, &first, &second);
    PyBuffer_Release(&view);
    return result;
}

/* ---- typed_rows: view=table's typed columns (_typed.h) ----------------------------------------------------- */

static const char TYPED_CAPSULE[] = "spark_logsource.mysql._kernel.typed";

/* The conversions of one image shape's present columns, in plan order. */
typedef struct {
    Py_ssize_t n;
    tk_conv convs[];
} tk_plan;

static void typed_capsule_destructor(PyObject *capsule)
{
    PyMem_Free(PyCapsule_GetPointer(capsule, TYPED_CAPSULE));
}

/* compile_typed(convs) -> capsule; convs: one (source, target, unsigned, bits, precision, scale, width,
 * src_precision, src_scale) per present column (typed_kernel.py conversion). */
static PyObject *compile_typed(PyObject *self, PyObject *args)
{
    PyObject *convs;
    if (!PyArg_ParseTuple(args, "O!:compile_typed", &PyList_Type, &convs))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(convs);
    if (m > 0xffffff)
        return PyErr_Format(PyExc_ValueError, "%zd columns", m);
    tk_plan *t = PyMem_Calloc(1, sizeof(tk_plan) + ((size_t)m + 1) * sizeof(tk_conv));
    if (t == NULL)
        return PyErr_NoMemory();
    t->n = m;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *c = PyList_GET_ITEM(convs, j);
        tk_conv *cv = &t->convs[j];
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 9) {
            PyErr_SetString(PyExc_TypeError, "a conversion is a 9-tuple");
            goto fail;
        }
        if (long_item(c, 0, S_NONE, S_JSON, &cv->source) || long_item(c, 1, 0, T_NTARGETS - 1, &cv->target) ||
            long_item(c, 2, 0, 1, &cv->is_unsigned) || long_item(c, 3, 0, 64, &cv->bits) ||
            long_item(c, 4, 0, 38, &cv->precision) || long_item(c, 5, 0, 38, &cv->scale) ||
            long_item(c, 6, 0, 16, &cv->width) || long_item(c, 7, 0, 38, &cv->src_precision) ||
            long_item(c, 8, 0, 38, &cv->src_scale))
            goto fail;
        if (cv->source == S_INT && cv->bits < 8) {
            PyErr_SetString(PyExc_ValueError, "an integer conversion needs its width");
            goto fail;
        }
    }
    PyObject *capsule = PyCapsule_New(t, TYPED_CAPSULE, typed_capsule_destructor);
    if (capsule == NULL)
        PyMem_Free(t);
    return capsule;
fail:
    PyMem_Free(t);
    return NULL;
}

/* One side of a rows event as typed columns, one per present column. */
typedef struct {
    Py_ssize_t m;
    tk_col *cols;
} tk_side;

static void tk_side_clear(tk_side *s)
{
    if (s->cols != NULL)
        for (Py_ssize_t j = 0; j < s->m; j++)
            tk_col_free(&s->cols[j]);
    PyMem_Free(s->cols);
    s->cols = NULL;
}

/* Decode one image at *pos into the side's columns: MK_OK, MK_ERR (an exception is set) or TK_DECLINE. */
static int typed_image(mk_ctx *x, const mk_plan *plan, const tk_plan *conv, size_t *pos, size_t row_start,
                       tk_side *s)
{
    size_t p = *pos;
    if (plan->null_bytes > x->end - p)
        return trunc_value(x, p, "row NULL bitmap");
    const uint8_t *nulls = x->data + p;
    p += plan->null_bytes;
    for (Py_ssize_t j = 0; j < plan->n; j++) {
        const tk_conv *cv = &conv->convs[j];
        tk_col *c = &s->cols[j];
        int rc;
        if (nulls[j >> 3] >> (j & 7) & 1) {
            rc = tk_null(c, cv);
        } else {
            x->vals.len = 0;
            if (emit_value(x, &x->vals, plan, &plan->cols[j], &p, row_start))
                return MK_ERR;
            rc = tk_put(c, cv, x->vals.data, x->vals.len);
        }
        if (rc == TK_NOMEM)
            return nomem();
        if (rc == TK_DECLINE)
            return TK_DECLINE;
    }
    *pos = p;
    return MK_OK;
}

/* The rows of one event's row data from pos to x->end as typed columns (x->nrows counts them): MK_OK, MK_ERR or
 * TK_DECLINE (a value that does not convert; the sides then hold part of the event). */
static int typed_event_rows(mk_ctx *x, tk_side *first, tk_side *second, const mk_plan *plan,
                            const mk_plan *plan_after, const tk_plan *conv, const tk_plan *conv_after, int op,
                            size_t pos)
{
    while (pos < x->end) {
        size_t row_start = pos;
        int rc = typed_image(x, plan, conv, &pos, row_start, first);
        if (rc == MK_OK && op == OP_UPDATE)
            rc = typed_image(x, plan_after, conv_after, &pos, row_start, second);
        if (rc)
            return rc;
        if (pos == row_start) /* no column present: the row would repeat forever */
            return raise_data_error(CorruptDataError, x, row_start,
                                    PyUnicode_FromFormat("row %zd of %U: row image without columns", x->nrows,
                                                         x->label));
        x->nrows++;
    }
    return MK_OK;
}

/* Room for the typed columns of a side of m present columns (m = 0: an unused side). */
static int tk_side_init(tk_side *s, Py_ssize_t m)
{
    s->m = m;
    s->cols = PyMem_Calloc((size_t)m + 1, sizeof(tk_col));
    return s->cols == NULL ? nomem() : 0;
}

/* ((valid, data, ends or None), ...) of a side: one entry per present column; (valid, values, ends, metadata,
 * metadata ends, text bytes) for a T_VARIANT column. */
static PyObject *tk_side_result(const tk_side *s, const tk_plan *conv)
{
    PyObject *out = PyTuple_New(s->m);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < s->m; j++) {
        const tk_col *c = &s->cols[j];
        int target = conv->convs[j].target;
        PyObject *item = TK_WIDTH[target]
                             ? Py_BuildValue("(NNO)", buf_bytes(&c->valid), buf_bytes(&c->data), Py_None)
                         : target == T_VARIANT
                             ? Py_BuildValue("(NNNNNn)", buf_bytes(&c->valid), buf_bytes(&c->data), buf_bytes(&c->ends),
                                             buf_bytes(&c->meta), buf_bytes(&c->mends), (Py_ssize_t)c->text)
                             : Py_BuildValue("(NNN)", buf_bytes(&c->valid), buf_bytes(&c->data), buf_bytes(&c->ends));
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, j, item);
    }
    return out;
}

/* (first, second) as tk_side_result gives them, second None unless the op is an UPDATE; NULL on error. */
static PyObject *tk_sides_result(const tk_side *first, const tk_side *second, int op, const tk_plan *conv,
                                 const tk_plan *conv_after)
{
    PyObject *a = tk_side_result(first, conv);
    PyObject *b = a == NULL ? NULL : op == OP_UPDATE ? tk_side_result(second, conv_after) : Py_NewRef(Py_None);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

static tk_plan *get_typed(PyObject *capsule)
{
    return (tk_plan *)PyCapsule_GetPointer(capsule, TYPED_CAPSULE);
}

/* typed_rows(data, pos, plan, plan_after, typed, typed_after, op, path, data_base, in_block, label)
 *   -> (n, first, second), or None when a value does not convert (the event takes the Python path). */
static PyObject *typed_rows(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    PyObject *cap_before, *cap_after, *typed_before, *typed_after, *path, *label;
    int op, in_block;
    long long data_base;
    if (!PyArg_ParseTuple(args, "y*nOOOOiOLpU:typed_rows", &view, &start, &cap_before, &cap_after, &typed_before,
                          &typed_after, &op, &path, &data_base, &in_block, &label))
        return NULL;
    PyObject *result = NULL;
    mk_ctx x = {0};
    tk_side first = {0}, second = {0};
    mk_plan *plan = get_plan(cap_before);
    mk_plan *plan_after = plan ? get_plan(cap_after) : NULL;
    tk_plan *conv = plan_after ? get_typed(typed_before) : NULL;
    tk_plan *conv_after = conv ? get_typed(typed_after) : NULL;
    if (conv_after == NULL)
        goto done;
    if (op < OP_INSERT || op > OP_DELETE || start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "bad op or start position");
        goto done;
    }
    if (conv->n != plan->n || conv_after->n != plan_after->n) {
        PyErr_SetString(PyExc_ValueError, "the conversions do not match the plans");
        goto done;
    }
    if (tk_side_init(&first, plan->n) || tk_side_init(&second, op == OP_UPDATE ? plan_after->n : 0))
        goto done;
    ctx_init(&x, &view, path, data_base, in_block, label);
    int rc = typed_event_rows(&x, &first, &second, plan, plan_after, conv, conv_after, op, (size_t)start);
    if (rc == TK_DECLINE)
        result = Py_NewRef(Py_None);
    if (rc)
        goto done;
    {
        PyObject *sides = tk_sides_result(&first, &second, op, conv, conv_after);
        if (sides != NULL) {
            result = Py_BuildValue("(nOO)", x.nrows, PyTuple_GET_ITEM(sides, 0), PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    tk_side_clear(&first);
    tk_side_clear(&second);
    ctx_clear(&x);
    PyBuffer_Release(&view);
    return result;
}

/* ---- rows event head (fast path of rows.parse_rows_head) ------------------------------------------------------ */

/* rows_head(body, table_id_size, post_header_len, v2, update) -> (table_id, flags, pos, ncols, present, present_after)
 * or None.
 *
 * The post-header, v2 extra data, column count and column bitmaps of an uncompressed rows event (layout: see
 * rows.parse_rows_head; docs/formats/mysql-binlog.md "Rows events"), for the common case only: a well-formed
 * head, a column count below 251 (one-byte packed integer) and at most 64 columns. Anything else is None, and the
 * caller takes rows.parse_rows_head, which raises its errors: this function never raises for bad bytes. */
typedef struct {
    uint64_t table_id, flags, present, present_after;
    size_t pos, ncols;
} rows_head_t;

/* The head of a well-formed uncompressed rows event body into *h: 1, else 0 (the caller takes the Python path). */
static int read_rows_head(const uint8_t *b, size_t len, int table_id_size, int post_header_len, int v2, int update,
                          rows_head_t *h)
{
    if (table_id_size != 4 && table_id_size != 6)
        return 0;
    size_t fixed = (size_t)table_id_size + 2;
    size_t pos = post_header_len > (int)fixed ? (size_t)post_header_len : fixed;
    if (post_header_len < 0 || len < pos)
        return 0;
    h->table_id = rd_le(b, table_id_size);
    h->flags = rd_le(b + table_id_size, 2);
    if (v2) {
        if (len < fixed + 2)
            return 0;
        size_t extra_len = (size_t)rd_le(b + fixed, 2);
        if (extra_len < 2 || pos + extra_len - 2 > len)
            return 0;
        pos += extra_len - 2;
    }
    if (pos >= len || b[pos] >= 251)
        return 0;
    size_t ncols = b[pos++];
    if (ncols > 64)
        return 0;
    size_t bitmap_len = (ncols + 7) / 8;
    if (pos + bitmap_len * (update ? 2 : 1) > len)
        return 0;
    uint64_t mask = ncols == 64 ? UINT64_MAX : (((uint64_t)1 << ncols) - 1);
    h->present = rd_le(b + pos, (int)bitmap_len) & mask;
    pos += bitmap_len;
    h->present_after = h->present;
    if (update) {
        h->present_after = rd_le(b + pos, (int)bitmap_len) & mask;
        pos += bitmap_len;
    }
    h->pos = pos;
    h->ncols = ncols;
    return 1;
}

static PyObject *rows_head(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int table_id_size, post_header_len, v2, update;
    if (!PyArg_ParseTuple(args, "y*iipp:rows_head", &view, &table_id_size, &post_header_len, &v2, &update))
        return NULL;
    rows_head_t h;
    int ok = read_rows_head(view.buf, (size_t)view.len, table_id_size, post_header_len, v2, update, &h);
    PyBuffer_Release(&view);
    if (!ok)
        Py_RETURN_NONE;
    return Py_BuildValue("(KKnnKK)", (unsigned long long)h.table_id, (unsigned long long)h.flags, (Py_ssize_t)h.pos,
                         (Py_ssize_t)h.ncols, (unsigned long long)h.present, (unsigned long long)h.present_after);
}

/* ---- a run of rows events (rows_run.py) ------------------------------------------------------------------- */

/* A run's images go into one pair of sides, so their int32 end offsets count from the run's first image, as
 * rows_encode.ImageColumn wants; an event that fails is cut off again with side_seek. */

#define EVENT_HEADER_LEN 19
#define MAX_EVENT_SIZE (((size_t)1 << 30) + 4096)

typedef struct {
    size_t ends, data, meta_ends, meta;
} side_mark;

static side_mark side_tell(const side *s)
{
    side_mark m = {s->ends.len, s->data.len, s->meta_ends.len, s->meta.len};
    return m;
}

static void side_seek(side *s, side_mark m)
{
    s->ends.len = m.ends;
    s->data.len = m.data;
    s->meta_ends.len = m.meta_ends;
    s->meta.len = m.meta;
}

/* CRC-32 (zlib) of [p, p + n): folded here where the processor can (_crc32.h), else through Python's zlib.crc32,
 * without copying the bytes. -1: not computed. */
static long long crc_of(PyObject *crc32, const uint8_t *p, size_t n)
{
    if (ls_crc32_folds())
        return ls_crc32(0, p, n);
    PyObject *mv = PyMemoryView_FromMemory((char *)p, (Py_ssize_t)n, PyBUF_READ);
    if (mv == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(crc32, mv);
    Py_DECREF(mv);
    if (r == NULL)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    return (long long)v;
}

/* encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size,
 *                 post_header_len, v2, table_id, ncols, present, present_after, plan, plan_after, op, as_json, path,
 *                 label, max_rows, max_bytes)
 *   -> (events, nrows, first, second)
 *
 * Consecutive events of buf[start:limit) (buf[0] is file offset `base`) that are all rows events of `type_code`
 * for the same table id, column count and column bitmaps, whole, with a good CRC (or, unverified, a log_pos of 0
 * or their end), at file offsets below `stop`, whose rows the plans encode without error; at most `max_rows`
 * rows and `max_bytes` event bytes (the first event is never cut by these). The walk ends before the first event
 * that is not so: that event is left to the Python path, which reads it and raises its error if it has one.
 * `events` packs five little-endian int64 per event: file offset, next offset, timestamp, server id, rows. */
/* What a run decodes its events' rows into: the Variant / JSON sides of encode_rows, or (conv set) the typed
 * columns of typed_rows; with the lengths of every buffer before the current event, to cut a failed event off. */
typedef struct {
    const mk_plan *plan, *plan_after;
    const tk_plan *conv, *conv_after;
    side first, second;
    side_mark m1, m2;
    tk_side tfirst, tsecond;
    ls_buf marks;
} run_out;

static int run_mark(run_out *o)
{
    if (o->conv == NULL) {
        o->m1 = side_tell(&o->first);
        o->m2 = side_tell(&o->second);
        return 0;
    }
    o->marks.len = 0;
    for (int k = 0; k < 2; k++) {
        const tk_side *s = k ? &o->tsecond : &o->tfirst;
        for (Py_ssize_t j = 0; j < s->m; j++) {
            const tk_col *c = &s->cols[j];
            size_t lens[6] = {c->valid.len, c->data.len, c->ends.len, c->meta.len, c->mends.len, c->text};
            if (ls_buf_put(&o->marks, lens, sizeof lens))
                return nomem();
        }
    }
    return 0;
}

static void run_reset(run_out *o)
{
    if (o->conv == NULL) {
        side_seek(&o->first, o->m1);
        side_seek(&o->second, o->m2);
        return;
    }
    const size_t *lens = (const size_t *)o->marks.data;
    for (int k = 0; k < 2; k++) {
        tk_side *s = k ? &o->tsecond : &o->tfirst;
        for (Py_ssize_t j = 0; j < s->m; j++, lens += 6) {
            tk_col *c = &s->cols[j];
            c->valid.len = lens[0];
            c->data.len = lens[1];
            c->ends.len = lens[2];
            c->meta.len = lens[3];
            c->mends.len = lens[4];
            c->text = lens[5];
        }
    }
}

static int run_event_rows(mk_ctx *x, run_out *o, int op, size_t pos)
{
    if (o->conv == NULL)
        return encode_event_rows(x, &o->first, &o->second, o->plan, o->plan_after, op, pos);
    return typed_event_rows(x, &o->tfirst, &o->tsecond, o->plan, o->plan_after, o->conv, o->conv_after, op, pos);
}

static void run_clear(run_out *o)
{
    side_clear(&o->first);
    side_clear(&o->second);
    tk_side_clear(&o->tfirst);
    tk_side_clear(&o->tsecond);
    ls_buf_free(&o->marks);
}

/* The run's arguments but its output. */
typedef struct {
    Py_ssize_t start, limit, max_rows, max_bytes, ncols;
    long long base, stop;
    int crc_len, verify, type_code, table_id_size, post_header_len, v2, op;
    unsigned long long table_id, present, present_after;
    PyObject *crc32;
} run_args;

/* Walk the events of buf[start:limit] of the run's table and shape, decoding their rows into o; the five int64 of
 * each event read go to events. Stops before the first event that is anything else or that fails (0), or on an
 * error that is not the event's (-1: out of memory, the CRC function failed). */
static int walk_run(const run_args *a, const uint8_t *buf, mk_ctx *x, run_out *o, ls_buf *events,
                    Py_ssize_t *total_rows)
{
    Py_ssize_t total_bytes = 0, nevents = 0;
    size_t at = (size_t)a->start;
    int crc_len = a->crc_len;
    while (at + EVENT_HEADER_LEN <= (size_t)a->limit && a->base + (long long)at < a->stop) {
        const uint8_t *h = buf + at;
        size_t size = (size_t)rd_le(h + 9, 4);
        if (h[4] != a->type_code || size < (size_t)(EVENT_HEADER_LEN + crc_len) || size > MAX_EVENT_SIZE
            || at + size > (size_t)a->limit)
            break;
        if (nevents > 0 && total_bytes + (Py_ssize_t)size > a->max_bytes)
            break;
        long long next = a->base + (long long)(at + size);
        if (crc_len && a->verify) {
            long long crc = crc_of(a->crc32, h, size - 4);
            if (crc < 0)
                return -1;
            if ((uint32_t)crc != (uint32_t)rd_le(h + size - 4, 4))
                break;
        } else {
            uint32_t log_pos = (uint32_t)rd_le(h + 13, 4);
            if (log_pos != 0 && log_pos != (uint32_t)next)
                break;
        }
        const uint8_t *body = h + EVENT_HEADER_LEN;
        size_t body_len = size - EVENT_HEADER_LEN - (size_t)crc_len;
        rows_head_t hd;
        if (!read_rows_head(body, body_len, a->table_id_size, a->post_header_len, a->v2, a->op == OP_UPDATE, &hd)
            || hd.table_id != a->table_id || hd.ncols != (size_t)a->ncols || hd.present != a->present
            || hd.present_after != a->present_after)
            break;
        if (run_mark(o))
            return -1;
        x->data = body;
        x->end = body_len;
        x->data_base = a->base + (long long)at + EVENT_HEADER_LEN;
        x->nrows = 0;
        if (run_event_rows(x, o, a->op, hd.pos) || (nevents > 0 && *total_rows + x->nrows > a->max_rows)) {
            /* left to the per-event path, which reads this event again (and raises its error, if any) */
            run_reset(o);
            PyErr_Clear();
            break;
        }
        int64_t rec[5] = {a->base + (long long)at, next, (int64_t)rd_le(h, 4), (int64_t)rd_le(h + 5, 4), x->nrows};
        if (ls_buf_put(events, rec, sizeof rec))
            return nomem();
        nevents++;
        *total_rows += x->nrows;
        total_bytes += (Py_ssize_t)size;
        at += size;
    }
    return 0;
}

/* The checks of a run's arguments; -1 with an exception set. */
static int run_check(const run_args *a, const Py_buffer *view)
{
    if (a->op < OP_INSERT || a->op > OP_DELETE || a->start < 0 || a->limit > view->len
        || (a->crc_len != 0 && a->crc_len != 4)) {
        PyErr_SetString(PyExc_ValueError, "bad op, range or checksum length");
        return -1;
    }
    return 0;
}

/* encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size, post_header_len,
 *                 v2, table_id, ncols, present, present_after, plan, plan_after, typed, typed_after, op, as_json,
 *                 path, label, max_rows, max_bytes) -> (events, nrows, first, second)
 * The sides are Variant / JSON images as encode_rows gives them, or, when typed / typed_after are conversions (not
 * None), typed columns as typed_rows gives them. */
static PyObject *encode_rows_run(PyObject *self, PyObject *args)
{
    Py_buffer view;
    run_args a = {0};
    int as_json;
    PyObject *cap_before, *cap_after, *typed_before, *typed_after, *path, *label;
    if (!PyArg_ParseTuple(args, "y*nnLLipOiiipKnKKOOOOipOUnn:encode_rows_run", &view, &a.start, &a.limit, &a.base,
                          &a.stop, &a.crc_len, &a.verify, &a.crc32, &a.type_code, &a.table_id_size,
                          &a.post_header_len, &a.v2, &a.table_id, &a.ncols, &a.present, &a.present_after, &cap_before,
                          &cap_after, &typed_before, &typed_after, &a.op, &as_json, &path, &label, &a.max_rows,
                          &a.max_bytes))
        return NULL;
    PyObject *result = NULL;
    mk_ctx x = {0};
    run_out o = {0};
    ls_buf events = {0};
    Py_ssize_t total_rows = 0;
    int typed = typed_before != Py_None;
    o.plan = get_plan(cap_before);
    o.plan_after = o.plan ? get_plan(cap_after) : NULL;
    if (o.plan_after == NULL || run_check(&a, &view))
        goto done;
    if (typed) {
        o.conv = get_typed(typed_before);
        o.conv_after = o.conv ? get_typed(typed_after) : NULL;
        if (o.conv_after == NULL)
            goto done;
        if (o.conv->n != o.plan->n || o.conv_after->n != o.plan_after->n) {
            PyErr_SetString(PyExc_ValueError, "the conversions do not match the plans");
            goto done;
        }
        if (tk_side_init(&o.tfirst, o.plan->n) || tk_side_init(&o.tsecond, a.op == OP_UPDATE ? o.plan_after->n : 0))
            goto done;
    }
    x.path = path;
    x.label = label;
    x.json = as_json && !typed;
    if (walk_run(&a, view.buf, &x, &o, &events, &total_rows))
        goto done;
    {
        PyObject *sides = typed ? tk_sides_result(&o.tfirst, &o.tsecond, a.op, o.conv, o.conv_after)
                                : sides_result(&o.first, &o.second, a.op, x.json);
        if (sides != NULL) {
            result = Py_BuildValue("(NnOO)", buf_bytes(&events), total_rows, PyTuple_GET_ITEM(sides, 0),
                                   PyTuple_GET_ITEM(sides, 1));
            Py_DECREF(sides);
        }
    }
done:
    run_clear(&o);
    ctx_clear(&x);
    ls_buf_free(&events);
    PyBuffer_Release(&view);
    return result;
}

/* The (value, metadata) of one JSON text with the scratch state c, None where Python decides; NULL on error. */
static PyObject *json_variant_with(jv_ctx *c, const Py_buffer *text)
{
    ls_buf value = {0}, meta = {0};
    int ascii;
    int rc = utf8_valid(text->buf, (size_t)text->len, &ascii)
                 ? jv_convert(c, text->buf, (size_t)text->len, &value, &meta) : JV_DECLINE;
    PyObject *result = rc == JV_OK ? Py_BuildValue("(NN)", buf_bytes(&value), buf_bytes(&meta))
                     : rc == JV_DECLINE ? Py_NewRef(Py_None) : PyErr_NoMemory();
    ls_buf_free(&value);
    ls_buf_free(&meta);
    return result;
}

/* json_variant(text) -> (value, metadata) or None: the Variant of one JSON text (UTF-8 bytes) as a JSON column of
 * view=table gets it (_json_variant.h); None where the Python reference must decide (it may raise). */
static PyObject *json_variant(PyObject *self, PyObject *args)
{
    Py_buffer text;
    if (!PyArg_ParseTuple(args, "y*:json_variant", &text))
        return NULL;
    jv_ctx ctx = {0};
    PyObject *result = json_variant_with(&ctx, &text);
    PyBuffer_Release(&text);
    jv_free(&ctx);
    return result;
}

/* json_variants(texts): json_variant of each, with one scratch state, as a column's values are converted. */
static PyObject *json_variants(PyObject *self, PyObject *texts)
{
    PyObject *seq = PySequence_Fast(texts, "json_variants takes a sequence of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    jv_ctx ctx = {0};
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        Py_buffer text;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &text, PyBUF_SIMPLE) < 0) {
            Py_CLEAR(out);
            break;
        }
        PyObject *one = json_variant_with(&ctx, &text);
        PyBuffer_Release(&text);
        if (one == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, one);
    }
    jv_free(&ctx);
    Py_DECREF(seq);
    return out;
}

/* crc32(data, value=0): zlib.crc32's result, computed by _crc32.h (folded, or a byte at a time). */
static PyObject *crc32(PyObject *self, PyObject *args)
{
    Py_buffer data;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &data, &value))
        return NULL;
    uint32_t crc;
    if (data.len > 5 * 1024) { /* as zlib.crc32: other threads run meanwhile */
        Py_BEGIN_ALLOW_THREADS
        crc = ls_crc32(value, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = ls_crc32(value, data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *crc32_folds(PyObject *self, PyObject *unused) { return PyBool_FromLong(ls_crc32_folds()); }

static PyObject *set_crc32_folding(PyObject *self, PyObject *on)
{
    int truth = PyObject_IsTrue(on);
    if (truth < 0)
        return NULL;
    ls_crc32_set_folding(truth);
    return PyBool_FromLong(ls_crc32_folds());
}

/* ---- module ------------------------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"compile_plan", compile_plan, METH_VARARGS,
     "compile_plan(specs, order, metadata, json_keys) -> plan\n\nThe compiled description of one row-image shape "
     "(see rows_encode._plan)."},
    {"encode_rows", encode_rows, METH_VARARGS,
     "encode_rows(data, pos, plan, plan_after, op, as_json, path, data_base, in_block, label) -> (n, first, second)"
     "\n\nEncode the row images of one rows event (see rows_encode.encode_rows_event_c)."},
    {"encode_rows_run", encode_rows_run, METH_VARARGS,
     "encode_rows_run(buf, start, limit, base, stop, crc_len, verify, crc32, type_code, table_id_size, "
     "post_header_len, v2, table_id, ncols, present, present_after, plan, plan_after, typed, typed_after, op, "
     "as_json, path, label, max_rows, max_bytes) -> (events, nrows, first, second)\n\nEncode a run of rows events "
     "of one table and shape (see rows_run.py), as typed columns when typed is not None (see typed_kernel.py)."},
    {"compile_typed", compile_typed, METH_VARARGS,
     "compile_typed(convs) -> typed\n\nThe conversions of one image shape's present columns to view=table's typed "
     "columns (see typed_kernel.py)."},
    {"typed_rows", typed_rows, METH_VARARGS,
     "typed_rows(data, pos, plan, plan_after, typed, typed_after, op, path, data_base, in_block, label) -> (n, "
     "first, second) or None\n\nThe row images of one rows event as typed columns (see typed_kernel.py)."},
    {"json_variant", json_variant, METH_VARARGS,
     "json_variant(text) -> (value, metadata) or None\n\nThe Variant of a JSON text as view=table's JSON columns "
     "get it; None where the Python reference decides (see _json_variant.h)."},
    {"json_variants", json_variants, METH_O,
     "json_variants(texts) -> list\n\njson_variant of each text, converted one after another with one scratch state "
     "(as a column's values are: the metadata of repeated keys is reused)."},
    {"rows_head", rows_head, METH_VARARGS,
     "rows_head(body, table_id_size, post_header_len, v2, update) -> (table_id, flags, pos, ncols, present, "
     "present_after) or None\n\nThe head of a well-formed uncompressed rows event (None: use rows.parse_rows_head)."},
    {"crc32", crc32, METH_VARARGS,
     "crc32(data, value=0) -> int\n\nzlib.crc32(data, value), as binlog events are checked (see _crc32.h)."},
    {"crc32_folds", crc32_folds, METH_NOARGS,
     "crc32_folds() -> bool\n\nWhether crc32 folds with PCLMULQDQ here (else events are checked with zlib.crc32)."},
    {"set_crc32_folding", set_crc32_folding, METH_O,
     "set_crc32_folding(on) -> bool\n\nFold where the processor can (True) or never (False: the run walk calls "
     "zlib.crc32 back); returns crc32_folds()."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spark_logsource.mysql._kernel",
    "Compiled MySQL/MariaDB row images -> Variant / JSON (twin of rows_encode.encode_rows_event_py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    PyObject *errors = PyImport_ImportModule("spark_logsource.errors");
    if (errors == NULL)
        return NULL;
    CorruptDataError = PyObject_GetAttrString(errors, "CorruptDataError");
    TruncatedDataError = PyObject_GetAttrString(errors, "TruncatedDataError");
    Py_DECREF(errors);
    if (CorruptDataError == NULL || TruncatedDataError == NULL)
        return NULL;
    ls_crc32_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* The plan compiler in rows_encode.py speaks these numbers: export them so a test can compare. */
    static const struct { const char *name; int value; } constants[] = {
        {"K_NULL", K_NULL}, {"K_INT", K_INT}, {"K_FLOAT", K_FLOAT}, {"K_DOUBLE", K_DOUBLE},
        {"K_DECIMAL", K_DECIMAL}, {"K_DATE", K_DATE}, {"K_YEAR", K_YEAR}, {"K_DATETIME2", K_DATETIME2},
        {"K_TIMESTAMP2", K_TIMESTAMP2}, {"K_TIME2", K_TIME2}, {"K_TIMESTAMP_OLD", K_TIMESTAMP_OLD},
        {"K_DATETIME_OLD", K_DATETIME_OLD}, {"K_TIME_OLD", K_TIME_OLD}, {"K_TEXT", K_TEXT}, {"K_ENUM", K_ENUM},
        {"K_SET", K_SET}, {"K_BIT", K_BIT}, {"CS_UTF8", CS_UTF8}, {"CS_BINARY", CS_BINARY},
        {"CS_TABLE", CS_TABLE}, {"CS_CODEC", CS_CODEC},
        {"S_NONE", S_NONE}, {"S_INT", S_INT}, {"S_YEAR", S_YEAR}, {"S_FLOAT", S_FLOAT}, {"S_DECIMAL", S_DECIMAL},
        {"S_DATE", S_DATE}, {"S_DATETIME", S_DATETIME}, {"S_TIMESTAMP", S_TIMESTAMP}, {"S_TEXT", S_TEXT},
        {"S_BIT", S_BIT}, {"S_BYTES", S_BYTES}, {"S_RAW", S_RAW}, {"S_JSON", S_JSON}, {"T_INT8", T_INT8},
        {"T_INT16", T_INT16},
        {"T_INT32", T_INT32}, {"T_INT64", T_INT64}, {"T_FLOAT32", T_FLOAT32}, {"T_FLOAT64", T_FLOAT64},
        {"T_DECIMAL", T_DECIMAL}, {"T_DATE32", T_DATE32}, {"T_TIMESTAMP", T_TIMESTAMP}, {"T_STRING", T_STRING},
        {"T_BINARY", T_BINARY}, {"T_RAW", T_RAW}, {"T_VARIANT", T_VARIANT},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
