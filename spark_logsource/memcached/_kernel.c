/*
 * spark_logsource.memcached._kernel: the compiled twin of the framing loop (protocol._frame_loop) and of the
 * column extraction of tap.decode_bulk. Layouts: docs/formats/memcached-tap.md.
 *
 *     frame(data, pos, stop, max_body) -> (starts: bytes of int64, end: int, bad: bool)
 *     extract(data, starts: bytes of int64) -> tuple of bytes (see X_* below)
 *     acks(data, starts: bytes of int64) -> (ACK-flagged packets as int64 opcode << 32 | opaque, non-NOOP count)
 *
 * Both only read inside the buffer they are given (every length is checked before it is used), release the GIL
 * while they work, and return plain bytes that the Python side views with numpy. The Python code is the
 * reference: tests compare both on real recordings and generated packets.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

/* Bits of the "present" column of extract(); P_BADKEY: the key is not valid UTF-8. */
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

/* extract() returns, in this order: */
enum {
    X_OPCODE,   /* int32 */
    X_SEQ,      /* int64 */
    X_VBUCKET,  /* int32 */
    X_CAS,      /* int64 */
    X_FLAGS,    /* int64 */
    X_EXPIRY,   /* int64 */
    X_TAPFLAGS, /* int32 */
    X_TTL,      /* int32 */
    X_CKPT,     /* int64 */
    X_CODE,     /* int64: OPAQUE code / VBUCKET_SET state */
    X_BODY,     /* int64: body length */
    X_PRESENT,  /* uint16 bits P_* */
    X_KEY_OFFSETS, X_KEY_DATA, X_VALUE_OFFSETS, X_VALUE_DATA, X_ES_OFFSETS, X_ES_DATA, /* int32 offsets, bytes */
    X_TEXT_OFFSETS, X_TEXT_DATA, /* the key as UTF-8 text: ill-formed parts replaced by U+FFFD */
    X_RAW_OFFSETS, X_RAW_DATA,   /* the key bytes of the keys that are not UTF-8 only (others empty) */
    X_COUNT
};

static PyObject *k_extract(PyObject *self, PyObject *args) {
    Py_buffer view, sview;
    if (!PyArg_ParseTuple(args, "y*y*", &view, &sview))
        return NULL;
    PyObject *result = NULL;
    PyObject *out[X_COUNT] = {NULL};
    const uint8_t *b = (const uint8_t *)view.buf;
    const int64_t *starts = (const int64_t *)sview.buf;
    Py_ssize_t n = sview.len / 8, len = view.len;
    for (Py_ssize_t i = 0; i < n; i++) { /* every packet must lie inside the buffer */
        if (starts[i] < 0 || starts[i] + HEADER > len || starts[i] + HEADER + (Py_ssize_t)be32(b + starts[i] + 8) > len) {
            PyErr_SetString(PyExc_ValueError, "extract: a packet runs past the buffer");
            goto done;
        }
    }
    static const int width[X_COUNT] = {4, 8, 4, 8, 8, 8, 4, 4, 8, 8, 8, 2, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0};
    for (int c = 0; c < X_COUNT; c++) {
        int is_offsets = c == X_KEY_OFFSETS || c == X_VALUE_OFFSETS || c == X_ES_OFFSETS || c == X_TEXT_OFFSETS
                         || c == X_RAW_OFFSETS;
        Py_ssize_t size = width[c] * (n + is_offsets);
        if (width[c] == 0)
            continue;
        out[c] = PyBytes_FromStringAndSize(NULL, size);
        if (out[c] == NULL)
            goto done;
    }
#define COL(c, T) ((T *)PyBytes_AS_STRING(out[c]))
    int32_t *opcode = COL(X_OPCODE, int32_t), *vbucket = COL(X_VBUCKET, int32_t), *tapflags = COL(X_TAPFLAGS, int32_t);
    int32_t *ttl = COL(X_TTL, int32_t);
    int64_t *seq = COL(X_SEQ, int64_t), *cas = COL(X_CAS, int64_t), *flags = COL(X_FLAGS, int64_t);
    int64_t *expiry = COL(X_EXPIRY, int64_t), *ckpt = COL(X_CKPT, int64_t), *code = COL(X_CODE, int64_t);
    int64_t *bodylen = COL(X_BODY, int64_t);
    uint16_t *present = COL(X_PRESENT, uint16_t);
    int32_t *koff = COL(X_KEY_OFFSETS, int32_t), *voff = COL(X_VALUE_OFFSETS, int32_t), *eoff = COL(X_ES_OFFSETS, int32_t);
    int32_t *toff = COL(X_TEXT_OFFSETS, int32_t), *roff = COL(X_RAW_OFFSETS, int32_t);
    int64_t ktot = 0, vtot = 0, etot = 0, ttot = 0, rtot = 0;
    Py_BEGIN_ALLOW_THREADS
    koff[0] = voff[0] = eoff[0] = toff[0] = roff[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *h = b + starts[i];
        uint32_t magic = h[0], op = h[1], keylen = be16(h + 2), ext = h[4], body = be32(h + 8);
        uint32_t nes = 0, tf = 0, bits = 0;
        int is_tap = op >= 0x41 && op <= 0x47 && ext >= 8;
        opcode[i] = (int32_t)op;
        seq[i] = be32(h + 12);
        vbucket[i] = (int32_t)be16(h + 6);
        cas[i] = (int64_t)be64(h + 16);
        bodylen[i] = body;
        flags[i] = expiry[i] = ckpt[i] = code[i] = 0;
        tapflags[i] = ttl[i] = 0;
        int ok = magic == 0x80;
        if (is_tap) {
            nes = be16(h + HEADER);
            tf = be16(h + HEADER + 2);
            tapflags[i] = (int32_t)tf;
            ttl[i] = h[HEADER + 4];
        }
        if ((uint64_t)ext + nes + keylen > body)
            ok = 0;
        uint32_t klen = 0, vlen = 0, elen = 0;
        size_t tlen = 0, rlen = 0;
        if (ok) {
            bits |= P_OK;
            const uint8_t *es = h + HEADER + ext, *key = es + nes, *value = key + keylen;
            vlen = body - ext - nes - keylen;
            if (is_tap)
                bits |= P_TAP;
            if (is_tap && ext == 16) {
                bits |= P_ITEM;
                flags[i] = (tf & 0x04) ? be32(h + HEADER + 8) : le32(h + HEADER + 8);
                expiry[i] = be32(h + HEADER + 12);
            }
            if (keylen > 0 || op == 0x41 || op == 0x42) {
                bits |= P_KEY;
                klen = keylen;
                if (utf8_valid(key, keylen)) {
                    tlen = keylen;
                } else {
                    bits |= P_BADKEY;
                    tlen = utf8_replace(key, keylen, NULL);
                    rlen = keylen;
                }
            }
            if (op == 0x41 ? !(tf & 0x02) : vlen > 0)
                bits |= P_VALUE;
            else
                vlen = 0;
            if (nes > 0) {
                bits |= P_ES;
                elen = nes;
                if (nes >= 4) {
                    code[i] = be32(es);
                    if (op == 0x44)
                        bits |= P_OPAQUE;
                    if (op == 0x45)
                        bits |= P_STATE;
                }
            }
            if ((op == 0x46 || op == 0x47) && body - ext - nes - keylen >= 8) {
                bits |= P_CKPT;
                ckpt[i] = (int64_t)be64(value);
            }
        }
        present[i] = (uint16_t)bits;
        ktot += klen;
        vtot += vlen;
        etot += elen;
        ttot += (int64_t)tlen;
        rtot += (int64_t)rlen;
        toff[i + 1] = (int32_t)(ttot > INT32_MAX ? -1 : ttot);
        roff[i + 1] = (int32_t)(rtot > INT32_MAX ? -1 : rtot);
        koff[i + 1] = (int32_t)(ktot > INT32_MAX ? -1 : ktot);
        voff[i + 1] = (int32_t)(vtot > INT32_MAX ? -1 : vtot);
        eoff[i + 1] = (int32_t)(etot > INT32_MAX ? -1 : etot);
    }
    Py_END_ALLOW_THREADS
    if (ktot > INT32_MAX || vtot > INT32_MAX || etot > INT32_MAX || ttot > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "extract: more than 2 GiB of keys or values in one call");
        goto done;
    }
    out[X_KEY_DATA] = PyBytes_FromStringAndSize(NULL, ktot);
    out[X_VALUE_DATA] = PyBytes_FromStringAndSize(NULL, vtot);
    out[X_ES_DATA] = PyBytes_FromStringAndSize(NULL, etot);
    out[X_TEXT_DATA] = PyBytes_FromStringAndSize(NULL, ttot);
    out[X_RAW_DATA] = PyBytes_FromStringAndSize(NULL, rtot);
    if (!out[X_KEY_DATA] || !out[X_VALUE_DATA] || !out[X_ES_DATA] || !out[X_TEXT_DATA] || !out[X_RAW_DATA])
        goto done;
    {
        char *kd = PyBytes_AS_STRING(out[X_KEY_DATA]), *vd = PyBytes_AS_STRING(out[X_VALUE_DATA]);
        char *ed = PyBytes_AS_STRING(out[X_ES_DATA]);
        uint8_t *td = (uint8_t *)PyBytes_AS_STRING(out[X_TEXT_DATA]), *rd = (uint8_t *)PyBytes_AS_STRING(out[X_RAW_DATA]);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint8_t *h = b + starts[i];
            uint32_t ext = h[4], nes = (present[i] & P_TAP) ? be16(h + HEADER) : 0, keylen = be16(h + 2);
            const uint8_t *es = h + HEADER + ext;
            if (!(present[i] & P_OK))
                continue;
            if (eoff[i + 1] > eoff[i])
                memcpy(ed + eoff[i], es, (size_t)(eoff[i + 1] - eoff[i]));
            if (koff[i + 1] > koff[i]) {
                size_t kl = (size_t)(koff[i + 1] - koff[i]);
                memcpy(kd + koff[i], es + nes, kl);
                if (present[i] & P_BADKEY) {
                    utf8_replace(es + nes, kl, td + toff[i]);
                    memcpy(rd + roff[i], es + nes, kl);
                } else {
                    memcpy(td + toff[i], es + nes, kl);
                }
            }
            if (voff[i + 1] > voff[i])
                memcpy(vd + voff[i], es + nes + keylen, (size_t)(voff[i + 1] - voff[i]));
        }
        Py_END_ALLOW_THREADS
    }
    result = PyTuple_New(X_COUNT);
    if (result == NULL)
        goto done;
    for (int c = 0; c < X_COUNT; c++) {
        PyTuple_SET_ITEM(result, c, out[c]);
        out[c] = NULL;
    }
done:
    for (int c = 0; c < X_COUNT; c++)
        Py_XDECREF(out[c]);
    PyBuffer_Release(&view);
    PyBuffer_Release(&sview);
    return result;
#undef COL
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
    {"extract", k_extract, METH_VARARGS, "extract(data, starts) -> tuple of column buffers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel", "memcached TAP framing and column extraction", -1, kernel_methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&kernel_module); }
