/*
 * spark_logsource.memcached._kernel: the compiled twin of the framing loop (protocol._frame_loop) and of the
 * column extraction of tap.decode_bulk (tap._fields_numpy). Layouts: docs/formats/memcached-tap.md.
 *
 *     frame(data, pos, stop, max_body) -> (starts: bytes of int64, end: int, bad: bool)
 *     columns(data, starts: buffer of int64, alloc) -> (bad rows, Arrow buffers of every column; see C_* below)
 *     acks(data, starts: bytes of int64) -> (ACK-flagged packets as int64 opcode << 32 | opaque, non-NOOP count)
 *
 * They only read inside the buffer they are given (every length is checked before it is used) and release the GIL
 * while they work; columns() writes the Arrow buffers (validity bitmaps, offsets, values) that the Python side
 * wraps with pa.Array.from_buffers, the others return plain bytes that it views with numpy. The Python code is the
 * reference: tests compare both on real recordings and generated packets.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_native/_arrow_out.h"

#define HEADER 24

static inline uint32_t be16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint32_t le32(const uint8_t *p) {
    return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}
static inline uint64_t be64(const uint8_t *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

/* Extras length of each TAP opcode; -1 for others (NOOP and unknown codes take whatever they carry). */
static int tap_extras(int op) {
    switch (op) {
    case 0x41: case 0x46: case 0x47: return 16;
    case 0x42: case 0x43: case 0x44: case 0x45: return 8;
    default: return -1;
    }
}

static PyObject *k_frame(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, stop, max_body;
    if (!PyArg_ParseTuple(args, "y*nnn", &view, &pos, &stop, &max_body))
        return NULL;
    if (pos < 0 || stop > view.len || pos > stop) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "frame: bad range");
        return NULL;
    }
    Py_ssize_t cap = (stop - pos) / HEADER + 1;
    PyObject *out = PyBytes_FromStringAndSize(NULL, cap * 8);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int64_t *starts = (int64_t *)PyBytes_AS_STRING(out);
    const uint8_t *b = (const uint8_t *)view.buf;
    Py_ssize_t n = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    while (stop - pos >= HEADER) {
        const uint8_t *h = b + pos;
        uint32_t magic = h[0], op = h[1], ext = h[4], keylen = be16(h + 2), body = be32(h + 8);
        if ((magic != 0x80 && magic != 0x81) || (Py_ssize_t)body > max_body || ext + keylen > body) {
            bad = 1;
            break;
        }
        if (magic == 0x80) {
            int want = tap_extras((int)op);
            if (want >= 0 && (uint32_t)want != ext) {
                bad = 1;
                break;
            }
        }
        Py_ssize_t end = pos + HEADER + (Py_ssize_t)body;
        if (end > stop)
            break;
        starts[n++] = pos;
        pos = end;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&out, n * 8) < 0)
        return NULL;
    return Py_BuildValue("(NnO)", out, pos, bad ? Py_True : Py_False);
}

/* s[0:n] with every ill-formed part replaced by U+FFFD as Python's decode("utf-8", "replace") does it (one per
 * maximal subpart of a sequence); writes to dst unless NULL; returns the output length (at most 3 * n). */
static size_t utf8_replace(const uint8_t *s, size_t n, uint8_t *dst) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len = 0, bad = 1;
        if (c < 0x80) {
            len = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 < n && (s[i + 1] & 0xC0) == 0x80)
                len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
                bad = 2;
                if (i + 2 < n && (s[i + 2] & 0xC0) == 0x80)
                    len = 3;
            }
        } else if (c >= 0xF0 && c <= 0xF4) {
            uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
                bad = 2;
                if (i + 2 < n && (s[i + 2] & 0xC0) == 0x80) {
                    bad = 3;
                    if (i + 3 < n && (s[i + 3] & 0xC0) == 0x80)
                        len = 4;
                }
            }
        }
        if (len) {
            if (dst)
                memcpy(dst + o, s + i, len);
            o += len;
            i += len;
        } else {
            if (dst) {
                dst[o] = 0xEF;
                dst[o + 1] = 0xBF;
                dst[o + 2] = 0xBD;
            }
            o += 3;
            i += bad;
        }
    }
    return o;
}

/* Which columns of a row are set (columns() below); P_BADKEY: the key is not valid UTF-8. */
enum {
    P_OK = 1, P_TAP = 2, P_ITEM = 4, P_KEY = 8, P_VALUE = 16, P_ES = 32, P_CKPT = 64, P_STATE = 128,
    P_OPAQUE = 256, P_BADKEY = 512,
};

/* Whether s[0:n] is UTF-8 as Python's strict decoder takes it: no overlong forms, no surrogates, <= U+10FFFF. */
static int utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            uint64_t w; /* most keys are ASCII: 8 bytes at a time while no high bit is set */
            while (i + 8 <= n && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ULL) == 0))
                i += 8;
            if (i < n && s[i] < 0x80)
                i++;
            continue;
        }
        if (c < 0xC2)
            return 0;
        if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
            continue;
        }
        if (c < 0xF0) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0))
                return 0;
            i += 3;
            continue;
        }
        if (c < 0xF5) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))
                return 0;
            i += 4;
            continue;
        }
        return 0;
    }
    return 1;
}

/* columns() returns its 15 output columns in the order of tap.COLUMNS[2:] (seq ... opaque_code): */
enum {
    C_SEQ, C_OPCODE, C_VBUCKET, C_KEY, C_KEY_BYTES, C_VALUE, C_FLAGS, C_EXPIRY, C_CAS, C_TAP_FLAGS, C_TTL, C_ES,
    C_CKPT, C_STATE, C_OPAQUE, C_COUNT
};
enum { K_I64, K_I32, K_VAR };
static const uint8_t C_KIND[C_COUNT] = {
    K_I64, K_VAR, K_I32, K_VAR, K_VAR, K_VAR, K_I64, K_I64, K_I64, K_I32, K_I32, K_VAR, K_I64, K_VAR, K_VAR,
};
/* The P_* bit that makes a row of each column valid (the rest of the row's columns are null). */
static const uint16_t C_VALID[C_COUNT] = {
    P_OK, P_OK, P_OK, P_KEY, P_BADKEY, P_VALUE, P_ITEM, P_ITEM, P_OK, P_TAP, P_TAP, P_ES, P_CKPT, P_STATE, P_OPAQUE,
};

/* Names of the opcode column (tap.OPCODE_NAMES; other codes as their decimal number) and of the OPAQUE codes and
 * VBUCKET_SET states (tap.OPAQUE_CODES, tap.VBUCKET_STATES). */
static const char *opcode_label(uint32_t op) {
    switch (op) {
    case 0x0A: return "NOOP";
    case 0x40: return "CONNECT";
    case 0x41: return "MUTATION";
    case 0x42: return "DELETE";
    case 0x43: return "FLUSH";
    case 0x44: return "OPAQUE";
    case 0x45: return "VBUCKET_SET";
    case 0x46: return "CHECKPOINT_START";
    case 0x47: return "CHECKPOINT_END";
    default: return NULL;
    }
}
static const char *opaque_label(uint32_t code) {
    static const char *names[] = {"ENABLE_AUTO_NACK", "INITIAL_VBUCKET_STREAM", "ENABLE_CHECKPOINT_SYNC",
                                  "OPEN_CHECKPOINT", "COMPLETE_VB_FILTER_CHANGE", "CHECKPOINT_PERSISTENCE", NULL,
                                  "CLOSE_TAP_STREAM", "CLOSE_BACKFILL"};
    return code < sizeof names / sizeof names[0] ? names[code] : NULL;
}
static const char *state_label(uint32_t code) {
    static const char *names[] = {NULL, "active", "replica", "pending", "dead"};
    return code < sizeof names / sizeof names[0] ? names[code] : NULL;
}

/* dst[0:n] = src[0:n]: short copies (names, most keys) as a few moves, not a call or a `rep movs`. */
static inline void copy_bytes(uint8_t *dst, const uint8_t *src, size_t n) {
    if (n > 16) {
        memcpy(dst, src, n);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}

/* The opcode column's text of each opcode (opcode_label, or the decimal number): filled at module init. */
static char OPCODE_TEXT[256][20];
static uint8_t OPCODE_LEN[256];

/* `label`, or the decimal digits of `code` when label is NULL: written to dst unless NULL; returns the length. */
static size_t put_label(const char *label, uint32_t code, uint8_t *dst) {
    char digits[12];
    size_t len;
    if (label == NULL) {
        len = 0;
        do {
            digits[sizeof digits - 1 - len++] = (char)('0' + code % 10);
            code /= 10;
        } while (code);
        label = digits + sizeof digits - len;
    } else {
        len = strlen(label);
    }
    if (dst)
        memcpy(dst, label, len);
    return len;
}

/* An output buffer of n bytes (at least 1: an empty Arrow buffer is still a buffer) from alloc(n), Arrow's pool. */
static PyObject *out_alloc(PyObject *alloc, size_t n, uint8_t **data) { return ls_arrow_out(alloc, n ? n : 1, data); }

/* The validity bits of each P_* bit in use: index = bit number. */
#define NBITS 10

static int bit_index(uint16_t bit) {
    int i = 0;
    while (bit > 1) {
        bit >>= 1;
        i++;
    }
    return i;
}

/* What columns() writes: per output column its Arrow buffers (the objects alloc gave and their bytes), the
 * validity bitmap of each P_* bit with its null count, and per row the P_* bits it sets. */
typedef struct {
    Py_ssize_t n, nbad;
    PyObject *data_out[C_COUNT], *offs_out[C_COUNT], *valid_out[NBITS];
    uint8_t *data[C_COUNT], *valid[NBITS];
    int32_t *offs[C_COUNT];
    int64_t nulls[NBITS], tot[C_COUNT]; /* tot: the bytes of a variable-width column */
    uint16_t *present;
    uint32_t all_bits, any_bits;        /* the P_* bits every row / some row sets */
} tap_cols;

static void cols_free(tap_cols *o) {
    for (int c = 0; c < C_COUNT; c++) {
        Py_XDECREF(o->data_out[c]);
        Py_XDECREF(o->offs_out[c]);
    }
    for (int k = 0; k < NBITS; k++)
        Py_XDECREF(o->valid_out[k]);
    PyMem_Free(o->present);
}

/* The buffers whose size the row count fixes: fixed-width values, offsets, validity bitmaps; -1 on error. */
static int cols_alloc(tap_cols *o, PyObject *alloc) {
    Py_ssize_t n = o->n;
    o->present = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *o->present);
    if (o->present == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int c = 0; c < C_COUNT; c++) {
        if (C_KIND[c] == K_VAR) {
            uint8_t *raw;
            o->offs_out[c] = out_alloc(alloc, (size_t)(n + 1) * 4, &raw);
            if (o->offs_out[c] == NULL)
                return -1;
            o->offs[c] = (int32_t *)raw;
        } else {
            o->data_out[c] = out_alloc(alloc, (size_t)n * (C_KIND[c] == K_I64 ? 8 : 4), &o->data[c]);
            if (o->data_out[c] == NULL)
                return -1;
        }
    }
    for (int k = 0; k < NBITS; k++) {
        o->valid_out[k] = out_alloc(alloc, (size_t)(n + 7) / 8, &o->valid[k]);
        if (o->valid_out[k] == NULL)
            return -1;
    }
    return 0;
}

/* Pass 1 (GIL released): the fixed-width values, which columns each row sets, the end offset of every
 * variable-width value. 1 when a packet runs past the buffer, else 0. */
static int scan_rows(tap_cols *o, const uint8_t *b, Py_ssize_t len, const int64_t *starts) {
    Py_ssize_t n = o->n;
    int64_t *seq = (int64_t *)o->data[C_SEQ], *cas = (int64_t *)o->data[C_CAS], *flags = (int64_t *)o->data[C_FLAGS];
    int64_t *expiry = (int64_t *)o->data[C_EXPIRY], *ckpt = (int64_t *)o->data[C_CKPT];
    int32_t *vbucket = (int32_t *)o->data[C_VBUCKET], *tapflags = (int32_t *)o->data[C_TAP_FLAGS];
    int32_t *ttl = (int32_t *)o->data[C_TTL];
    int64_t t_op = 0, t_key = 0, t_raw = 0, t_value = 0, t_es = 0, t_state = 0, t_opaque = 0;
    int32_t *o_op = o->offs[C_OPCODE], *o_key = o->offs[C_KEY], *o_raw = o->offs[C_KEY_BYTES];
    int32_t *o_value = o->offs[C_VALUE], *o_es = o->offs[C_ES], *o_state = o->offs[C_STATE];
    int32_t *o_opaque = o->offs[C_OPAQUE];
    uint16_t *present = o->present;
    uint32_t all_bits = 0xFFFF, any_bits = 0;
    Py_ssize_t nbad = 0;
    int overrun = 0;
    for (int c = 0; c < C_COUNT; c++)
        if (C_KIND[c] == K_VAR)
            o->offs[c][0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0 || starts[i] > len - HEADER
            || (Py_ssize_t)be32(b + starts[i] + 8) > len - HEADER - starts[i]) {
            overrun = 1; /* every packet must lie inside the buffer */
            break;
        }
        const uint8_t *h = b + starts[i];
        uint32_t magic = h[0], op = h[1], keylen = be16(h + 2), ext = h[4], body = be32(h + 8);
        uint32_t nes = 0, tf = 0, bits = 0;
        int is_tap = op >= 0x41 && op <= 0x47 && ext >= 8 && ext <= body;
        if (is_tap) {
            nes = be16(h + HEADER);
            tf = be16(h + HEADER + 2);
        }
        seq[i] = be32(h + 12);
        vbucket[i] = (int32_t)be16(h + 6);
        cas[i] = (int64_t)be64(h + 16);
        tapflags[i] = (int32_t)tf;
        ttl[i] = is_tap ? h[HEADER + 4] : 0;
        flags[i] = expiry[i] = ckpt[i] = 0;
        if (magic == 0x80 && (uint64_t)ext + nes + keylen <= body) {
            const uint8_t *es = h + HEADER + ext, *key = es + nes, *value = key + keylen;
            uint32_t vlen = body - ext - nes - keylen;
            bits = P_OK;
            t_op += OPCODE_LEN[op];
            if (is_tap)
                bits |= P_TAP;
            if (is_tap && ext == 16) {
                bits |= P_ITEM;
                flags[i] = (tf & 0x04) ? be32(h + HEADER + 8) : le32(h + HEADER + 8);
                expiry[i] = be32(h + HEADER + 12);
            }
            if (keylen > 0 || op == 0x41 || op == 0x42) {
                bits |= P_KEY;
                if (utf8_valid(key, keylen)) {
                    t_key += keylen;
                } else {
                    bits |= P_BADKEY;
                    t_key += (int64_t)utf8_replace(key, keylen, NULL);
                    t_raw += keylen;
                }
            }
            if (op == 0x41 ? !(tf & 0x02) : vlen > 0) {
                bits |= P_VALUE;
                t_value += vlen;
            }
            if (nes > 0) {
                bits |= P_ES;
                t_es += nes;
                if (nes >= 4 && op == 0x44) {
                    bits |= P_OPAQUE;
                    t_opaque += (int64_t)put_label(opaque_label(be32(es)), be32(es), NULL);
                }
                if (nes >= 4 && op == 0x45) {
                    bits |= P_STATE;
                    t_state += (int64_t)put_label(state_label(be32(es)), be32(es), NULL);
                }
            }
            if ((op == 0x46 || op == 0x47) && vlen >= 8) {
                bits |= P_CKPT;
                ckpt[i] = (int64_t)be64(value);
            }
        } else {
            nbad++;
        }
        present[i] = (uint16_t)bits;
        all_bits &= bits;
        any_bits |= bits;
#define OFF(o, t) o[i + 1] = (int32_t)(t > INT32_MAX ? -1 : t)
        OFF(o_op, t_op);
        OFF(o_key, t_key);
        OFF(o_raw, t_raw);
        OFF(o_value, t_value);
        OFF(o_es, t_es);
        OFF(o_state, t_state);
        OFF(o_opaque, t_opaque);
#undef OFF
    }
    o->tot[C_OPCODE] = t_op, o->tot[C_KEY] = t_key, o->tot[C_KEY_BYTES] = t_raw, o->tot[C_VALUE] = t_value;
    o->tot[C_ES] = t_es, o->tot[C_STATE] = t_state, o->tot[C_OPAQUE] = t_opaque;
    o->all_bits = all_bits;
    o->any_bits = any_bits;
    o->nbad = nbad;
    return overrun;
}

/* The validity bitmap of each P_* bit and its null count: none needed where every row is set (a run of mutations
 * sets the same columns). */
static void validity_bitmaps(tap_cols *o) {
    Py_ssize_t n = o->n;
    for (int k = 0; k < NBITS; k++) {
        size_t bytes = (size_t)(n + 7) / 8;
        if (o->all_bits & (1u << k)) {
            o->nulls[k] = 0;
        } else if (!(o->any_bits & (1u << k))) {
            memset(o->valid[k], 0, bytes);
            o->nulls[k] = n;
        } else {
            int64_t set = 0;
            for (size_t j = 0; j < bytes; j++) {
                uint8_t v = 0;
                for (Py_ssize_t t = 0; t < 8 && (Py_ssize_t)(8 * j) + t < n; t++)
                    v |= (uint8_t)(((o->present[8 * j + t] >> k) & 1u) << t);
                o->valid[k][j] = v;
                set += __builtin_popcount(v);
            }
            o->nulls[k] = n - set;
        }
    }
}

/* The data buffers of the variable-width columns, now that their sizes are known; -1 on error. */
static int alloc_values(tap_cols *o, PyObject *alloc) {
    for (int c = 0; c < C_COUNT; c++) {
        if (o->tot[c] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "columns: more than 2 GiB of keys or values in one call");
            return -1;
        }
        if (C_KIND[c] == K_VAR) {
            o->data_out[c] = out_alloc(alloc, (size_t)o->tot[c], &o->data[c]);
            if (o->data_out[c] == NULL)
                return -1;
        }
    }
    return 0;
}

/* Pass 2 (GIL released): the bytes of every variable-width value; the rows left to Python go to bad. */
static void copy_values(tap_cols *o, const uint8_t *b, const int64_t *starts, int64_t *bad) {
    uint8_t *const *data = o->data;
    int32_t *const *offs = o->offs;
    for (Py_ssize_t i = 0, j = 0; i < o->n; i++) {
        uint16_t bits = o->present[i];
        if (!(bits & P_OK)) {
            bad[j++] = i;
            continue;
        }
        const uint8_t *h = b + starts[i];
        uint32_t op = h[1], ext = h[4], keylen = be16(h + 2), nes = (bits & P_TAP) ? be16(h + HEADER) : 0;
        const uint8_t *es = h + HEADER + ext, *key = es + nes, *value = key + keylen;
        copy_bytes(data[C_OPCODE] + offs[C_OPCODE][i], (const uint8_t *)OPCODE_TEXT[op], OPCODE_LEN[op]);
        if (bits & P_BADKEY) {
            utf8_replace(key, keylen, data[C_KEY] + offs[C_KEY][i]);
            copy_bytes(data[C_KEY_BYTES] + offs[C_KEY_BYTES][i], key, keylen);
        } else if (bits & P_KEY) {
            copy_bytes(data[C_KEY] + offs[C_KEY][i], key, keylen);
        }
        if (bits & P_VALUE)
            copy_bytes(data[C_VALUE] + offs[C_VALUE][i], value, (size_t)(offs[C_VALUE][i + 1] - offs[C_VALUE][i]));
        if (bits & P_ES)
            copy_bytes(data[C_ES] + offs[C_ES][i], es, nes);
        if (bits & P_OPAQUE)
            put_label(opaque_label(be32(es)), be32(es), data[C_OPAQUE] + offs[C_OPAQUE][i]);
        if (bits & P_STATE)
            put_label(state_label(be32(es)), be32(es), data[C_STATE] + offs[C_STATE][i]);
    }
}

/* (null_count, validity or None, values, offsets or None) per output column, as arrowcols.array_from_parts takes. */
static PyObject *column_parts(const tap_cols *o) {
    PyObject *parts = PyTuple_New(C_COUNT);
    if (parts == NULL)
        return NULL;
    for (int c = 0; c < C_COUNT; c++) {
        int k = bit_index(C_VALID[c]);
        PyObject *validity = o->nulls[k] ? o->valid_out[k] : Py_None;
        PyObject *part = Py_BuildValue("(LOOO)", (long long)o->nulls[k], validity, o->data_out[c],
                                       o->offs_out[c] ? o->offs_out[c] : Py_None);
        if (part == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        PyTuple_SET_ITEM(parts, c, part);
    }
    return parts;
}

/*
 * columns(data, starts: buffer of int64, alloc) -> (bad: bytes of int64, parts)
 *
 * The rows of the whole packets at `starts` in `data`, as Arrow buffers: parts holds, per output column (C_*), a
 * tuple (null_count, validity bitmap or None, values, offsets or None) for pa.Array.from_buffers. `bad` lists the
 * rows that are not TAP requests whose parts fit their body (responses, lying engine-specific lengths): every
 * column of those is null, and the caller decodes them one by one. Same columns as tap._fields_numpy + the
 * Python side of tap.decode_bulk (the reference), for every input.
 */
static PyObject *k_columns(PyObject *self, PyObject *args) {
    Py_buffer view, sview;
    PyObject *alloc;
    if (!PyArg_ParseTuple(args, "y*y*O", &view, &sview, &alloc))
        return NULL;
    PyObject *result = NULL, *bad_out = NULL, *parts = NULL;
    tap_cols o = {.n = sview.len / 8};
    const uint8_t *b = (const uint8_t *)view.buf;
    const int64_t *starts = (const int64_t *)sview.buf;
    if (cols_alloc(&o, alloc))
        goto done;
    int overrun;
    Py_BEGIN_ALLOW_THREADS
    overrun = scan_rows(&o, b, view.len, starts);
    validity_bitmaps(&o);
    Py_END_ALLOW_THREADS
    if (overrun) {
        PyErr_SetString(PyExc_ValueError, "columns: a packet runs past the buffer");
        goto done;
    }
    if (alloc_values(&o, alloc))
        goto done;
    bad_out = PyBytes_FromStringAndSize(NULL, o.nbad * 8);
    if (bad_out == NULL)
        goto done;
    {
        int64_t *bad = (int64_t *)PyBytes_AS_STRING(bad_out);
        Py_BEGIN_ALLOW_THREADS
        copy_values(&o, b, starts, bad);
        Py_END_ALLOW_THREADS
    }
    parts = column_parts(&o);
    if (parts != NULL)
        result = Py_BuildValue("(ON)", bad_out, parts);
done:
    Py_XDECREF(bad_out);
    cols_free(&o);
    PyBuffer_Release(&view);
    PyBuffer_Release(&sview);
    return result;
}

/* acks(data, starts) -> (acks: bytes of int64 (opcode << 32 | opaque) of the ACK-flagged TAP packets, in order,
 *                        data_packets: how many packets are not NOOPs) */
static PyObject *k_acks(PyObject *self, PyObject *args) {
    Py_buffer view, sview;
    if (!PyArg_ParseTuple(args, "y*y*", &view, &sview))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    const int64_t *starts = (const int64_t *)sview.buf;
    Py_ssize_t n = sview.len / 8, len = view.len, found = 0, data_packets = 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (out == NULL)
        goto fail;
    int64_t *acks = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0 || starts[i] + HEADER > len) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_ValueError, "acks: a packet runs past the buffer");
            goto fail;
        }
        const uint8_t *h = b + starts[i];
        if (h[1] != 0x0A)
            data_packets++;
        if (h[0] == 0x80 && h[1] >= 0x41 && h[1] <= 0x47 && h[4] >= 8 && starts[i] + HEADER + 4 <= len
            && (h[HEADER + 3] & 0x01))
            acks[found++] = ((int64_t)h[1] << 32) | (int64_t)be32(h + 12);
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&sview);
    if (_PyBytes_Resize(&out, found * 8) < 0)
        return NULL;
    return Py_BuildValue("(Nn)", out, data_packets);
fail:
    PyBuffer_Release(&view);
    PyBuffer_Release(&sview);
    return NULL;
}

static PyMethodDef kernel_methods[] = {
    {"acks", k_acks, METH_VARARGS, "acks(data, starts) -> (acks, data_packets)"},
    {"frame", k_frame, METH_VARARGS, "frame(data, pos, stop, max_body) -> (starts, end, bad)"},
    {"columns", k_columns, METH_VARARGS, "columns(data, starts, alloc) -> (bad rows, column parts)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel", "memcached TAP framing and column extraction", -1, kernel_methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    for (uint32_t op = 0; op < 256; op++)
        OPCODE_LEN[op] = (uint8_t)put_label(opcode_label(op), op, (uint8_t *)OPCODE_TEXT[op]);
    return PyModule_Create(&kernel_module);
}
