/*
 * The snapshot's bulk SELECT reader (mysql/snapshot/fast.py): the text-protocol row packets of one result set, read
 * in large blocks, split here and appended straight to Arrow column buffers of view=table's types.
 *
 *     text_columns(kinds, label) -> cols (a capsule)
 *     text_feed(cols, data, parse) -> (consumed, status)
 *     text_declined(cols) -> None or (row, column)
 *     text_take(cols) -> (nrows, [(nulls, validity, data, offsets), ...])
 *
 * The packets (docs/formats/mysql-snapshot.md "The bulk reader"): a 3-byte little-endian length, a 1-byte
 * sequence number, the payload; a payload of 0xFFFFFF bytes continues in the next packet. A row is one cell per
 * column: a length-encoded string, or 0xFB for NULL. The result ends with an EOF packet (0xFE, payload under 9
 * bytes); an ERR packet (0xFF) stops it. text_feed consumes whole (logical) packets only: a packet cut by the end of
 * the block is left for the next block (status 0). Status 1: the EOF packet was consumed (the result is over);
 * status 2: an ERR packet starts at `consumed` (the caller reads it). Every length is checked against the bytes left:
 * a cell longer than its row, or a row with too few or too many cells, is a CorruptDataError naming the label.
 *
 * Each cell is the server's text of one value, turned into what mysql/snapshot/values.py's decoder and
 * table/layout.py's cell_converter make of it, or declined: a value the C does not take exactly as the Python path
 * would (a zero or invalid date, text that is not UTF-8, a number out of range or not in the server's plain form)
 * stops the parsing (text_declined tells where); the rest of the result is still split, so the connection stays
 * usable, and the caller reads the chunk again by the Python path. Column kinds: the TX_* constants below, which
 * fast.py also speaks.
 */
#include "_kernel.h"

enum { TX_INT, TX_YEAR, TX_FLOAT, TX_DOUBLE, TX_DECIMAL, TX_DATE, TX_DATETIME, TX_TIMESTAMP, TX_STRING, TX_BINARY,
       TX_FIXED_BINARY, TX_NKINDS };
/* The integer column's Arrow width code (c of TX_INT): int8/16/32/64 or decimal128(20, 0). */
enum { TW_8, TW_16, TW_32, TW_64, TW_DEC };

#define TX_CAPSULE "spark_logsource.mysql._kernel.text_columns"
#define MAX_PACKET 0xFFFFFFu

typedef struct {
    int kind, a, b, c;
    int width;            /* bytes per row of a fixed-width column; 0 for string / binary */
    ls_buf valid, data, ends;
    Py_ssize_t nulls;
} tx_col;

typedef struct {
    Py_ssize_t n;
    tx_col *cols;
    PyObject *label;
    Py_ssize_t nrows;
    long long offset;     /* result bytes consumed before this block (error offsets) */
    Py_ssize_t declined_row, declined_col;
    int done;
    ls_buf scratch;       /* a packet of several fragments, put together */
} tx_state;

static void tx_free(PyObject *capsule)
{
    tx_state *s = PyCapsule_GetPointer(capsule, TX_CAPSULE);
    if (s == NULL)
        return;
    for (Py_ssize_t i = 0; i < s->n; i++) {
        ls_buf_free(&s->cols[i].valid);
        ls_buf_free(&s->cols[i].data);
        ls_buf_free(&s->cols[i].ends);
    }
    free(s->cols);
    ls_buf_free(&s->scratch);
    Py_XDECREF(s->label);
    free(s);
}

static int col_width(const tx_col *c)
{
    switch (c->kind) {
    case TX_INT: {
        static const int w[] = {1, 2, 4, 8, 16};
        return w[c->c];
    }
    case TX_YEAR: case TX_FLOAT: case TX_DATE: return 4;
    case TX_DOUBLE: case TX_DATETIME: case TX_TIMESTAMP: return 8;
    case TX_DECIMAL: return 16;
    default: return 0;
    }
}

PyObject *mk_text_columns(PyObject *self, PyObject *args)
{
    PyObject *kinds, *label;
    if (!PyArg_ParseTuple(args, "O!U", &PyTuple_Type, &kinds, &label))
        return NULL;
    tx_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return PyErr_NoMemory();
    s->n = PyTuple_GET_SIZE(kinds);
    s->cols = calloc(s->n ? (size_t)s->n : 1, sizeof *s->cols);
    s->declined_row = s->declined_col = -1;
    s->label = Py_NewRef(label);
    if (s->cols == NULL) {
        Py_DECREF(label);
        free(s);
        return PyErr_NoMemory();
    }
    PyObject *capsule = PyCapsule_New(s, TX_CAPSULE, tx_free);
    if (capsule == NULL) {
        free(s->cols);
        Py_DECREF(label);
        free(s);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < s->n; i++) {
        tx_col *c = &s->cols[i];
        PyObject *item = PyTuple_GET_ITEM(kinds, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4 || mk_long_item(item, 0, 0, TX_NKINDS - 1, &c->kind)
            || mk_long_item(item, 1, 0, 1 << 20, &c->a) || mk_long_item(item, 2, 0, 1 << 20, &c->b)
            || mk_long_item(item, 3, 0, TW_DEC, &c->c)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "text_columns: each kind is (kind, a, b, c)");
            Py_DECREF(capsule);
            return NULL;
        }
        if (c->kind == TX_DECIMAL && (c->a < 1 || c->a > MAX_DECIMAL_DIGITS || c->b > c->a)) {
            PyErr_SetString(PyExc_ValueError, "text_columns: DECIMAL precision out of range");
            Py_DECREF(capsule);
            return NULL;
        }
        c->width = col_width(c);
    }
    return capsule;
}

static tx_state *get_state(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, TX_CAPSULE);
}

/* ---- one cell ---------------------------------------------------------------------------------------------- */

enum { C_OK = 0, C_NOMEM = -1, C_DECLINE = 1 };

/* Digits only, as an unsigned 64-bit number (no overflow). */
static int parse_u64(const uint8_t *p, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return C_DECLINE;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return C_DECLINE;
        v = v * 10 + d;
    }
    *out = v;
    return C_OK;
}

static int num(const uint8_t *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9)
            return -1;
        v = v * 10 + (int)d;
    }
    return v;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : dm[m - 1];
}

/* Days since 1970-01-01 of a valid proleptic Gregorian date. */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD": the days of a date Python's datetime.date takes (year 1 to 9999), else declined (the decoder keeps
 * zero and invalid dates as text, an error row of the Python path). */
static int parse_date(const uint8_t *p, size_t n, int64_t *days)
{
    if (n < 10 || p[4] != '-' || p[7] != '-')
        return C_DECLINE;
    int y = num(p, 4), m = num(p + 5, 2), d = num(p + 8, 2);
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
        return C_DECLINE;
    *days = days_from_civil(y, m, d);
    return C_OK;
}

/* "YYYY-MM-DD hh:mm:ss[.f{1,6}]" -> microseconds since the epoch. */
static int parse_datetime(const uint8_t *p, size_t n, int64_t *micros)
{
    int64_t days;
    if (n < 19 || parse_date(p, 10, &days) || p[10] != ' ' || p[13] != ':' || p[16] != ':')
        return C_DECLINE;
    int h = num(p + 11, 2), mi = num(p + 14, 2), s = num(p + 17, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59)
        return C_DECLINE;
    int64_t frac = 0;
    if (n > 19) {
        int k = (int)(n - 20);
        if (p[19] != '.' || k < 1 || k > 6)
            return C_DECLINE;
        int f = num(p + 20, k);
        if (f < 0)
            return C_DECLINE;
        frac = f;
        for (int i = k; i < 6; i++)
            frac *= 10;
    }
    *micros = ((days * 24 + h) * 60 + mi) * 60 * INT64_C(1000000) + (int64_t)s * 1000000 + frac;
    return C_OK;
}

/* Strict UTF-8, as Python's bytes.decode("utf-8") takes it (no overlong forms, no surrogates, up to U+10FFFF). */
static int valid_utf8(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else
            return 0;
        if (n - i - 1 < k || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return 0;
        i += k + 1;
    }
    return 1;
}

static int put_int(tx_col *c, const uint8_t *p, size_t n)
{
    int neg = n > 0 && p[0] == '-';
    uint64_t u;
    if (parse_u64(p + neg, n - (size_t)neg, &u))
        return C_DECLINE;
    /* the declared integer's range (table/layout.py conv_int), then the view's width holds it */
    int bits = c->a * 8;
    __int128 v = neg ? -(__int128)u : (__int128)u;
    __int128 lo = c->b ? 0 : -((__int128)1 << (bits - 1));
    __int128 hi = c->b ? ((__int128)1 << bits) - 1 : ((__int128)1 << (bits - 1)) - 1;
    if (v < lo || v > hi)
        return C_DECLINE;
    uint8_t out[16];
    ls_put_le(out, (uint64_t)v, 8);
    ls_put_le(out + 8, (uint64_t)(v >> 64), 8);
    return ls_buf_put(&c->data, out, (size_t)c->width) ? C_NOMEM : C_OK;
}

static int put_decimal(tx_col *c, const uint8_t *p, size_t n)
{
    int neg = n > 0 && p[0] == '-';
    size_t i = (size_t)neg, digits = 0, frac = 0;
    int seen_dot = 0, any = 0;
    __int128 v = 0;
    for (; i < n; i++) {
        if (p[i] == '.' && !seen_dot) {
            seen_dot = 1;
            continue;
        }
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9)
            return C_DECLINE;
        any = 1;
        if (seen_dot)
            frac++;
        if (v != 0 || d != 0)
            digits++;
        if (digits > 38)
            return C_DECLINE;
        v = v * 10 + d;
    }
    if (!any || frac > (size_t)c->b || (seen_dot && frac == 0))
        return C_DECLINE;
    for (size_t k = frac; k < (size_t)c->b; k++) {
        if (v != 0 && ++digits > (size_t)c->a)
            return C_DECLINE;
        v *= 10;
    }
    if (digits > (size_t)c->a)  /* does not fit DECIMAL(p, s): the Python path's error */
        return C_DECLINE;
    if (neg)
        v = -v;
    uint8_t out[16];
    ls_put_le(out, (uint64_t)v, 8);
    ls_put_le(out + 8, (uint64_t)(v >> 64), 8);
    return ls_buf_put(&c->data, out, 16) ? C_NOMEM : C_OK;
}

static int put_double(tx_col *c, const uint8_t *p, size_t n)
{
    char text[64];
    if (n == 0 || n >= sizeof text)
        return C_DECLINE;
    for (size_t i = 0; i < n; i++) {  /* the server's plain forms only: no spaces, inf, nan or hex */
        uint8_t ch = p[i];
        if (!((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E'))
            return C_DECLINE;
    }
    memcpy(text, p, n);
    text[n] = 0;
    char *end;
    double d = strtod(text, &end);
    if (end != text + n)
        return C_DECLINE;
    if (c->kind == TX_FLOAT) {
        float f = (float)d;  /* pa.array(float, float32): the double rounded to the nearest float32 */
        return ls_buf_put(&c->data, &f, 4) ? C_NOMEM : C_OK;
    }
    return ls_buf_put(&c->data, &d, 8) ? C_NOMEM : C_OK;
}

static int put_bytes(tx_col *c, const uint8_t *p, size_t n)
{
    if (c->kind == TX_STRING && !valid_utf8(p, n))
        return C_DECLINE;
    if (c->kind == TX_FIXED_BINARY)
        while (n > 0 && p[n - 1] == 0)  /* values.py _fixed_binary: BINARY(n) without the server's padding */
            n--;
    if (ls_buf_put(&c->data, p, n))
        return C_NOMEM;
    if (c->data.len > (size_t)INT32_MAX)
        return C_DECLINE;  /* beyond int32 offsets: the Python path decides */
    int32_t end = (int32_t)c->data.len;
    return ls_buf_put(&c->ends, &end, 4) ? C_NOMEM : C_OK;
}

static int put_value(tx_col *c, const uint8_t *p, size_t n)
{
    int64_t v;
    switch (c->kind) {
    case TX_INT:
        return put_int(c, p, n);
    case TX_YEAR: {
        uint64_t u;
        if (parse_u64(p, n, &u) || u > INT32_MAX)
            return C_DECLINE;
        int32_t y = (int32_t)u;
        return ls_buf_put(&c->data, &y, 4) ? C_NOMEM : C_OK;
    }
    case TX_FLOAT:
    case TX_DOUBLE:
        return put_double(c, p, n);
    case TX_DECIMAL:
        return put_decimal(c, p, n);
    case TX_DATE: {
        if (n != 10 || parse_date(p, n, &v))
            return C_DECLINE;
        int32_t d = (int32_t)v;
        return ls_buf_put(&c->data, &d, 4) ? C_NOMEM : C_OK;
    }
    case TX_DATETIME:
    case TX_TIMESTAMP:
        if (parse_datetime(p, n, &v))
            return C_DECLINE;
        return ls_buf_put(&c->data, &v, 8) ? C_NOMEM : C_OK;
    default:
        return put_bytes(c, p, n);
    }
}

static int set_valid(tx_col *c, Py_ssize_t row, int valid)
{
    size_t byte = (size_t)row >> 3;
    if (byte >= c->valid.len) {
        if (ls_buf_byte(&c->valid, 0))
            return C_NOMEM;
    }
    if (valid)
        c->valid.data[byte] |= (uint8_t)(1u << (row & 7));
    return C_OK;
}

static int put_null(tx_col *c)
{
    c->nulls++;
    if (c->width) {
        static const uint8_t zeros[16];
        return ls_buf_put(&c->data, zeros, (size_t)c->width) ? C_NOMEM : C_OK;
    }
    if (c->data.len > (size_t)INT32_MAX)
        return C_DECLINE;
    int32_t end = (int32_t)c->data.len;
    return ls_buf_put(&c->ends, &end, 4) ? C_NOMEM : C_OK;
}

/* ---- one row, one block ----------------------------------------------------------------------------------- */

static int corrupt(tx_state *s, size_t at, const char *why)
{
    PyObject *off = PyLong_FromLongLong(s->offset + (long long)at);
    if (off == NULL)
        return MK_ERR;
    PyObject *msg = PyUnicode_FromFormat("row %zd of the result of %U: %s", s->nrows, s->label, why);
    if (msg != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(mk_CorruptDataError, s->label, off, msg, NULL);
        if (exc != NULL) {
            PyErr_SetObject(mk_CorruptDataError, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(msg);
    }
    Py_DECREF(off);
    return MK_ERR;
}

/* The cells of one row packet's payload p[0:n] (at: its offset in the block, for errors). */
static int parse_row(tx_state *s, const uint8_t *p, size_t n, size_t at)
{
    size_t i = 0;
    for (Py_ssize_t k = 0; k < s->n; k++) {
        tx_col *c = &s->cols[k];
        if (i >= n)
            return corrupt(s, at, "fewer cells than columns");
        uint8_t h = p[i++];
        uint64_t len;
        int r;
        if (h == 0xFB) {
            if ((r = set_valid(c, s->nrows, 0)) == C_OK)
                r = put_null(c);
        } else {
            if (h < 0xFB)
                len = h;
            else if (h == 0xFF)
                return corrupt(s, at, "a cell length starting with 0xFF");
            else {
                int w = h == 0xFC ? 2 : h == 0xFD ? 3 : 8;
                if (n - i < (size_t)w)
                    return corrupt(s, at, "a cell length cut short");
                len = rd_le(p + i, w);
                i += (size_t)w;
            }
            if (len > n - i)
                return corrupt(s, at, "a cell longer than its row");
            if ((r = set_valid(c, s->nrows, 1)) == C_OK)
                r = put_value(c, p + i, (size_t)len);
            i += (size_t)len;
        }
        if (r == C_NOMEM)
            return mk_nomem();
        if (r == C_DECLINE) {
            s->declined_row = s->nrows;
            s->declined_col = k;
            return MK_OK;
        }
    }
    if (i != n)
        return corrupt(s, at, "more cells than columns");
    s->nrows++;
    return MK_OK;
}

PyObject *mk_text_feed(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    Py_buffer view;
    int parse;
    if (!PyArg_ParseTuple(args, "Oy*p", &capsule, &view, &parse))
        return NULL;
    tx_state *s = get_state(capsule);
    if (s == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *data = view.buf;
    size_t end = (size_t)view.len, pos = 0;
    int status = 0;
    while (!s->done && end - pos >= 4) {
        /* one logical packet: fragments of MAX_PACKET bytes, then a shorter one */
        size_t p = pos, total = 0, nfrag = 0;
        int whole = 0;
        while (end - p >= 4) {
            size_t len = (size_t)rd_le(data + p, 3);
            if (end - p - 4 < len)
                break;
            p += 4 + len;
            total += len;
            nfrag++;
            if (len < MAX_PACKET) {
                whole = 1;
                break;
            }
        }
        if (!whole)
            break;  /* cut by the block's end: the next block brings the rest */
        const uint8_t *payload = data + pos + 4;
        if (nfrag > 1) {
            s->scratch.len = 0;
            for (size_t q = pos; q < p;) {
                size_t len = (size_t)rd_le(data + q, 3);
                if (ls_buf_put(&s->scratch, data + q + 4, len)) {
                    PyBuffer_Release(&view);
                    return PyErr_NoMemory();
                }
                q += 4 + len;
            }
            payload = s->scratch.data;
        }
        if (total > 0 && payload[0] == 0xFF && nfrag == 1) {
            status = 2;  /* the ERR packet: left in place for the caller */
            break;
        }
        if (total > 0 && total < 9 && payload[0] == 0xFE) {
            s->done = 1;
            status = 1;
            pos = p;
            break;
        }
        if (parse && s->declined_row < 0 && parse_row(s, payload, total, pos) != MK_OK) {
            PyBuffer_Release(&view);
            return NULL;
        }
        pos = p;
    }
    s->offset += (long long)pos;
    PyBuffer_Release(&view);
    return Py_BuildValue("(ni)", (Py_ssize_t)pos, status);
}

PyObject *mk_text_declined(PyObject *self, PyObject *capsule)
{
    tx_state *s = get_state(capsule);
    if (s == NULL)
        return NULL;
    if (s->declined_row < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", s->declined_row, s->declined_col);
}

PyObject *mk_text_take(PyObject *self, PyObject *capsule)
{
    tx_state *s = get_state(capsule);
    if (s == NULL)
        return NULL;
    PyObject *cols = PyList_New(s->n);
    if (cols == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < s->n; k++) {
        tx_col *c = &s->cols[k];
        /* rows after the last NULL or value left no byte: the bitmap covers every row */
        while (c->valid.len < ((size_t)s->nrows + 7) / 8)
            if (ls_buf_byte(&c->valid, 0)) {
                Py_DECREF(cols);
                return PyErr_NoMemory();
            }
        PyObject *offsets = Py_None;
        if (!c->width) {
            ls_buf o = {0};
            int32_t zero = 0;
            if (ls_buf_put(&o, &zero, 4) || ls_buf_put(&o, c->ends.data ? c->ends.data : (uint8_t *)"",
                                                         (size_t)s->nrows * 4)) {
                ls_buf_free(&o);
                Py_DECREF(cols);
                return PyErr_NoMemory();
            }
            offsets = mk_buf_bytes(&o);
            ls_buf_free(&o);
            if (offsets == NULL) {
                Py_DECREF(cols);
                return NULL;
            }
        } else
            Py_INCREF(offsets);
        PyObject *validity = c->nulls ? mk_buf_bytes(&c->valid) : Py_NewRef(Py_None);
        PyObject *part = validity == NULL ? NULL
                                          : Py_BuildValue("(nNNN)", c->nulls, validity, mk_buf_bytes(&c->data), offsets);
        if (part == NULL) {
            if (validity == NULL)
                Py_DECREF(offsets);
            Py_DECREF(cols);
            return NULL;
        }
        PyList_SET_ITEM(cols, k, part);
        c->valid.len = c->data.len = c->ends.len = 0;
        c->nulls = 0;
    }
    PyObject *out = Py_BuildValue("(nN)", s->nrows, cols);
    s->nrows = 0;
    return out;
}
