/*
 * spark_logsource.mysql._kernel, one value: the bytes of one column of a row image -> its Variant value bytes or its
 * JSON text (the Python value values.py decodes, as variant.encode_variant / jsontext.to_json write it).
 *
 * Value layouts (the byte rules values.py implements; mysql-server sql/field.cc Field_*::pack, mysys/my_time.cc
 * my_datetime_packed_from_binary / my_time_packed_from_binary / my_timestamp_from_binary, strings/decimal.cc
 * bin2decimal), and the Python value each one is, which fixes its Variant / JSON form (arrow/variant.py and
 * arrow/jsontext.py docstrings):
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
 * Errors are those of rows.parse_rows_event for the same bytes, kind, offset and message (a BinlogDecodeError whose
 * kind is the public class; the Python caller adds the file): a value that runs past the data is a
 * TruncatedDataError, at the value's start for the values values.py checks itself (ValueTruncated) and at the row's
 * start for those where Python's struct / indexing fails first; a DECIMAL digit group out of range is a
 * CorruptDataError at the value. Offsets are file offsets, data_base + position (data_base alone for the inflated
 * block of a compressed event). Every length is checked against the bytes left before
 * it is used; output buffers grow through _buf.h, bounded by LS_BUF_MAX.
 */
#include "_kernel.h"

#include "../_native/_text.h"
#include "_dates.h"
#include "_decimal.h"

/* A value cut short: at the row's start or at the value's, as rows.py reports it for this column. */
static inline int truncated(mk_ctx *x, const mk_col *col, size_t pos, size_t row_start)
{
    return col->row_start_trunc ? mk_trunc_row(x, row_start) : mk_trunc_value(x, pos, col->what);
}

static inline int nomem(void) { return mk_nomem(); }

/* ---- little emitters (variant value bytes or JSON text into b) --------------------------------------------- */

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
    /* Above int64: decimal16 with scale 0 (arrow/variant.py rule 2). */
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

/* ---- DECIMAL (the digits and their text: _decimal.h) ------------------------------------------------------ */

static int decimal_out_of_range(mk_ctx *x, size_t pos)
{
    return mk_raise_error(mk_CorruptDataError, x, pos,
                          PyUnicode_FromFormat("row %zd of %U: DECIMAL: decimal digit group out of range", x->nrows,
                                               x->label));
}

static int emit_decimal(mk_ctx *x, ls_buf *b, const mk_col *col, const uint8_t *p, size_t pos)
{
    int scale = col->b;
    __int128 v = 0;
    int ndig;
    if (!x->json && col->a <= 38) { /* the common case: the value straight from its digit groups */
        if (decimal_int128(p, col->c, col->a, scale, &v, &ndig))
            return decimal_out_of_range(x, pos);
    } else {
        char digits[MAX_DECIMAL_DIGITS + 8];
        char text[2 * MAX_DECIMAL_DIGITS + 32];
        int neg;
        ndig = decimal_digits(p, col->c, col->a, scale, digits, &neg);
        if (ndig < 0)
            return decimal_out_of_range(x, pos);
        if (x->json) {
            int n = decimal_text(text, neg, digits, ndig, scale);
            return put_ascii(b, text, (size_t)n);
        }
        if ((ndig > scale ? ndig : scale) > 38) {
            int n = decimal_text(text, neg, digits, ndig, scale);
            return emit_str(x, b, (const uint8_t *)text, (size_t)n);
        }
        for (int i = 0; i < ndig; i++)
            v = v * 10 + (digits[i] - '0');
        if (neg)
            v = -v;
    }
    int precision = ndig > scale ? ndig : scale;
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

static const int64_t FRAC_SCALE[4] = {0, 10000, 100, 1}; /* microseconds per unit of a 1..3-byte fraction */

/* Bytes of the fraction of a DATETIME2 / TIMESTAMP2 / TIME2 of `fsp` digits. */
static inline int frac_bytes(int fsp) { return (fsp + 1) / 2; }

/* DATE: 3 bytes LE, day 5 bits, month 4, year the rest; "YYYY-MM-DD" text when invalid. */
static inline int value_date(mk_ctx *x, ls_buf *b, const uint8_t *v)
{
    uint32_t d = (uint32_t)rd_le(v, 3);
    int64_t year = d >> 9;
    int month = (int)((d >> 5) & 15), day = (int)(d & 31);
    if (date_valid(year, month, day))
        return emit_date(x, b, year, month, day);
    char s[48];
    return emit_text(x, b, s, snprintf(s, sizeof s, "%04d-%02d-%02d", (int)year, month, day));
}

/* DATETIME2: 5 bytes BE - 0x8000000000 (year*13+month, day, hour, minute, second bit fields), then the fraction. */
static inline int value_datetime2(mk_ctx *x, ls_buf *b, const uint8_t *v, int fsp)
{
    int fb = frac_bytes(fsp);
    int64_t intpart = (int64_t)rd_be(v, 5) - 0x8000000000LL;
    int64_t frac = fb ? (int64_t)rd_be(v + 5, fb) * FRAC_SCALE[fb] : 0;
    int64_t ymd = intpart >> 17, hms = intpart & 0x1FFFF;
    int64_t ym = ymd >> 5;
    return emit_datetime_value(x, b, floor_div(ym, 13), floor_mod(ym, 13), ymd & 31, hms >> 12, (hms >> 6) & 63,
                               hms & 63, frac, fsp);
}

/* TIMESTAMP2: 4 bytes BE epoch seconds, then the fraction; all zero is the zero timestamp's text. */
static inline int value_timestamp2(mk_ctx *x, ls_buf *b, const uint8_t *v, int fsp)
{
    int fb = frac_bytes(fsp);
    int64_t seconds = (int64_t)rd_be(v, 4);
    int64_t frac = fb ? (int64_t)rd_be(v + 4, fb) * FRAC_SCALE[fb] : 0;
    if (seconds == 0 && frac == 0) {
        char s[48], f[32];
        fraction_text(f, sizeof f, 0, fsp);
        return emit_text(x, b, s, snprintf(s, sizeof s, "0000-00-00 00:00:00%s", f));
    }
    return emit_datetime(x, b, seconds * 1000000 + frac, 1);
}

/* TIME2: 3 + fraction bytes BE - bias, one signed number -> "[-]HH:MM:SS[.f]". */
static inline int value_time2(mk_ctx *x, ls_buf *b, const uint8_t *v, int fsp)
{
    int fb = frac_bytes(fsp);
    int fbits = 8 * fb;
    int64_t value = (int64_t)rd_be(v, 3 + fb) - ((int64_t)0x800000 << fbits);
    int negative = value < 0;
    if (negative)
        value = -value;
    int64_t hms = value >> fbits;
    int64_t frac = (value & (((int64_t)1 << fbits) - 1)) * FRAC_SCALE[fb];
    return emit_time_text(x, b, negative, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63, frac, fsp);
}

/* Old DATETIME: u64 YYYYMMDDhhmmss. */
static inline int value_datetime_old(mk_ctx *x, ls_buf *b, const uint8_t *v)
{
    uint64_t u = rd_le(v, 8);
    uint64_t d = u / 1000000, t = u % 1000000;
    /* Every part fits int64 (d < 2**44). */
    return emit_datetime_value(x, b, (int64_t)(d / 10000), (int64_t)(d / 100 % 100), (int64_t)(d % 100),
                               (int64_t)(t / 10000), (int64_t)(t / 100 % 100), (int64_t)(t % 100), 0, 0);
}

/* Old TIME: 3-byte signed HHMMSS. */
static inline int value_time_old(mk_ctx *x, ls_buf *b, const uint8_t *v)
{
    int64_t t = (int64_t)(rd_le(v, 3) << 40) >> 40;
    int negative = t < 0;
    if (negative)
        t = -t;
    return emit_time_text(x, b, negative, t / 10000, t / 100 % 100, t % 100, 0, 0);
}

/* ENUM: the 1-based index's name when the names are known (c = 1 marks an empty name list), else the index. */
static inline int value_enum(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, uint64_t index)
{
    if (col->nnames || col->c) {
        if (index == 0)
            return emit_str(x, b, (const uint8_t *)"", 0);
        if (index <= col->nnames) {
            size_t k = col->names_at + (size_t)index - 1;
            return emit_str(x, b, plan->blob.data + plan->name_off[k], plan->name_len[k]);
        }
    }
    return emit_int(x, b, (int64_t)index);
}

/* SET: the names of the bits set, comma-separated, when the names are known and cover the mask, else the mask. */
static inline int value_set(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, uint64_t mask)
{
    if (!(col->nnames || col->c) || !(col->nnames >= 64 || mask < ((uint64_t)1 << col->nnames)))
        return emit_uint(x, b, mask);
    x->tmp.len = 0;
    int first = 1;
    for (size_t bit = 0; bit < col->nnames && bit < 64; bit++) {
        if (!(mask >> bit & 1))
            continue;
        size_t k = col->names_at + bit;
        if ((!first && ls_buf_byte(&x->tmp, ',')) ||
            ls_buf_put(&x->tmp, plan->blob.data + plan->name_off[k], plan->name_len[k]))
            return mk_nomem();
        first = 0;
    }
    return emit_str(x, b, x->tmp.data, x->tmp.len);
}

/* The bytes a value of a fixed-size kind takes (0 for NULL and TEXT), known from its plan: compile_plan keeps it in
 * col->size, so a value is checked against the bytes left without a look at its kind. */
size_t mk_fixed_size(const mk_col *col)
{
    switch (col->kind) {
    case K_INT:
    case K_ENUM:
    case K_SET:
    case K_BIT:
        return (size_t)col->a;
    case K_FLOAT:
    case K_TIMESTAMP_OLD:
        return 4;
    case K_DOUBLE:
    case K_DATETIME_OLD:
        return 8;
    case K_DECIMAL:
        return (size_t)col->c;
    case K_DATE:
    case K_TIME_OLD:
        return 3;
    case K_YEAR:
        return 1;
    case K_DATETIME2:
        return 5 + (size_t)frac_bytes(col->a);
    case K_TIMESTAMP2:
        return 4 + (size_t)frac_bytes(col->a);
    case K_TIME2:
        return 3 + (size_t)frac_bytes(col->a);
    default:
        return 0;
    }
}

/* A value of a fixed-size kind whose col->size bytes are at v (checked present), into b. */
static inline int fixed_value(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, const uint8_t *v,
                              size_t p)
{
    switch (col->kind) {
    case K_INT: {
        uint64_t u = rd_le(v, col->a);
        if (!col->b)
            return emit_uint(x, b, u);
        int shift = 64 - 8 * col->a;
        return emit_int(x, b, (int64_t)(u << shift) >> shift);
    }
    case K_FLOAT: {
        uint32_t bits = (uint32_t)rd_le(v, 4);
        float f;
        memcpy(&f, &bits, 4);
        return emit_double(x, b, (double)f);
    }
    case K_DOUBLE: {
        uint64_t bits = rd_le(v, 8);
        double d;
        memcpy(&d, &bits, 8);
        return emit_double(x, b, d);
    }
    case K_DECIMAL:
        return emit_decimal(x, b, col, v, p);
    case K_DATE:
        return value_date(x, b, v);
    case K_YEAR:
        return emit_int(x, b, v[0] ? 1900 + v[0] : 0);
    case K_DATETIME2:
        return value_datetime2(x, b, v, col->a);
    case K_TIMESTAMP2:
        return value_timestamp2(x, b, v, col->a);
    case K_TIME2:
        return value_time2(x, b, v, col->a);
    case K_TIMESTAMP_OLD: {
        int64_t seconds = (int64_t)rd_le(v, 4);
        if (seconds == 0)
            return emit_text(x, b, "0000-00-00 00:00:00", 19);
        return emit_datetime(x, b, seconds * 1000000, 1);
    }
    case K_DATETIME_OLD:
        return value_datetime_old(x, b, v);
    case K_TIME_OLD:
        return value_time_old(x, b, v);
    case K_ENUM:
        return value_enum(x, b, plan, col, rd_le(v, col->a));
    case K_SET:
        return value_set(x, b, plan, col, rd_le(v, col->a));
    case K_BIT:
        return emit_uint(x, b, rd_be(v, col->a));
    default:
        PyErr_Format(PyExc_SystemError, "unknown value kind %d", col->kind);
        return MK_ERR;
    }
}

/* CHAR / VARCHAR / BLOB / TEXT: a 1-4 byte LE length, then the bytes, as text in the column's charset. */
static inline int text_value(mk_ctx *x, ls_buf *b, const mk_col *col, size_t *pos, size_t row_start)
{
    size_t p = *pos;
    size_t left = x->end - p;
    const uint8_t *v = x->data + p;
    int w = col->a;
    if (left < (size_t)w)
        return (w == 1) ? mk_trunc_row(x, row_start) : mk_trunc_value(x, p, col->what);
    uint64_t n = rd_le(v, w);
    if (n > left - (size_t)w)
        return mk_trunc_value(x, p, col->what);
    *pos = p + (size_t)w + (size_t)n;
    return emit_charset_text(x, b, col, v + w, (size_t)n);
}

/* Decode the value of `col` at *pos into b; *pos moves past it. */
int mk_emit_value(mk_ctx *x, ls_buf *b, const mk_plan *plan, const mk_col *col, size_t *pos, size_t row_start)
{
    if (col->kind == K_NULL)
        return mk_emit_null(x, b);
    if (col->kind == K_TEXT)
        return text_value(x, b, col, pos, row_start);
    size_t p = *pos;
    if (x->end - p < col->size)
        return truncated(x, col, p, row_start);
    *pos = p + col->size;
    return fixed_value(x, b, plan, col, x->data + p, p);
}
