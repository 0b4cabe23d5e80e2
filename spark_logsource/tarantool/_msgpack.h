/*
 * Bounds-checked MessagePack reader over one in-memory payload (used by _kernel.c).
 *
 * Format: https://github.com/msgpack/msgpack/blob/master/spec.md ("Formats" table). Every length read from
 * the data is checked against the bytes left before it is used, and an array/map count is checked against
 * the bytes left (each element takes at least one byte), so a corrupt header can never make a caller
 * allocate or loop beyond the size of the payload. 0xc1 ("never used") is an error.
 */
#ifndef SPARK_LOGSOURCE_MSGPACK_H
#define SPARK_LOGSOURCE_MSGPACK_H

#include <stdint.h>
#include <string.h>

enum mp_kind {
    MPK_NIL,
    MPK_FALSE,
    MPK_TRUE,
    MPK_UINT,    /* any non-negative integer (positive fixint, uint 8..64, or a signed encoding >= 0) */
    MPK_INT,     /* a negative integer */
    MPK_FLOAT32,
    MPK_FLOAT64,
    MPK_STR,
    MPK_BIN,
    MPK_ARRAY,
    MPK_MAP,
    MPK_EXT,
};

enum mp_err { MP_OK = 0, MP_ETRUNC = 1, MP_EBAD = 2 };

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} mp_rd;

typedef struct {
    int kind;
    int8_t ext;          /* MPK_EXT: the application type */
    uint32_t n;          /* STR/BIN/EXT: data bytes; ARRAY: items; MAP: pairs */
    union {
        uint64_t u;
        int64_t i;
        double d;
    } v;
    const uint8_t *data; /* STR/BIN/EXT: the data bytes */
} mp_item;

static inline uint16_t mp_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t mp_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t mp_be64(const uint8_t *p) { return ((uint64_t)mp_be32(p) << 32) | mp_be32(p + 4); }

/* Consume `need` header bytes; returns the start of them or NULL when the data ends first. */
#define MP_TAKE(r, need) ((size_t)((r)->end - (r)->p) >= (size_t)(need) ? ((r)->p += (need), (r)->p - (need)) : NULL)

static inline int mp_set_int(mp_item *it, int64_t v)
{
    if (v >= 0) {
        it->kind = MPK_UINT;
        it->v.u = (uint64_t)v;
    } else {
        it->kind = MPK_INT;
        it->v.i = v;
    }
    return MP_OK;
}

/* Data of `n` bytes follows (str/bin/ext). */
static inline int mp_take_data(mp_rd *r, mp_item *it, int kind, uint32_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return MP_ETRUNC;
    it->kind = kind;
    it->n = n;
    it->data = r->p;
    r->p += n;
    return MP_OK;
}

/* A container of `n` items follows; `per` = 1 for arrays, 2 for maps. */
static inline int mp_container(mp_rd *r, mp_item *it, int kind, uint32_t n, int per)
{
    if ((uint64_t)n * (uint64_t)per > (uint64_t)(r->end - r->p))
        return MP_ETRUNC;
    it->kind = kind;
    it->n = n;
    return MP_OK;
}

/*
 * Read one item header. Scalars, str, bin and ext are consumed whole; for an array or a map the cursor
 * is left on its first element. Returns MP_OK, MP_ETRUNC (data ends inside the item) or MP_EBAD (0xc1).
 */
static int mp_next_other(mp_rd *r, mp_item *it, uint8_t c);

static inline int mp_next(mp_rd *r, mp_item *it)
{
    if (r->p >= r->end)
        return MP_ETRUNC;
    uint8_t c = *r->p++;
    if (c <= 0x7f) {
        it->kind = MPK_UINT;
        it->v.u = c;
        return MP_OK;
    }
    if (c >= 0xe0) {
        it->kind = MPK_INT;
        it->v.i = (int8_t)c;
        return MP_OK;
    }
    if (c <= 0x8f)
        return mp_container(r, it, MPK_MAP, c & 0x0f, 2);
    if (c <= 0x9f)
        return mp_container(r, it, MPK_ARRAY, c & 0x0f, 1);
    if (c <= 0xbf)
        return mp_take_data(r, it, MPK_STR, c & 0x1f);
    /* the other encodings Tarantool rows use most (lsn, timestamps, ids, floats), before the full switch */
    size_t left = (size_t)(r->end - r->p);
    const uint8_t *h = r->p;
    switch (c) {
    case 0xcb: {
        if (left < 8)
            return MP_ETRUNC;
        uint64_t bits = mp_be64(h);
        memcpy(&it->v.d, &bits, 8);
        it->kind = MPK_FLOAT64;
        r->p += 8;
        return MP_OK;
    }
    case 0xcc:
        if (left < 1)
            return MP_ETRUNC;
        it->kind = MPK_UINT;
        it->v.u = h[0];
        r->p += 1;
        return MP_OK;
    case 0xcd:
        if (left < 2)
            return MP_ETRUNC;
        it->kind = MPK_UINT;
        it->v.u = mp_be16(h);
        r->p += 2;
        return MP_OK;
    case 0xce:
        if (left < 4)
            return MP_ETRUNC;
        it->kind = MPK_UINT;
        it->v.u = mp_be32(h);
        r->p += 4;
        return MP_OK;
    default:
        return mp_next_other(r, it, c);
    }
}

/* mp_next for the first bytes 0xc0..0xdf (the cursor is past that byte). */
static int mp_next_other(mp_rd *r, mp_item *it, uint8_t c)
{
    const uint8_t *h;
    switch (c) {
    case 0xc0: it->kind = MPK_NIL; return MP_OK;
    case 0xc1: return MP_EBAD;
    case 0xc2: it->kind = MPK_FALSE; return MP_OK;
    case 0xc3: it->kind = MPK_TRUE; return MP_OK;
    case 0xc4: if (!(h = MP_TAKE(r, 1))) return MP_ETRUNC; return mp_take_data(r, it, MPK_BIN, h[0]);
    case 0xc5: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; return mp_take_data(r, it, MPK_BIN, mp_be16(h));
    case 0xc6: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; return mp_take_data(r, it, MPK_BIN, mp_be32(h));
    case 0xc7: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; it->ext = (int8_t)h[1];
        return mp_take_data(r, it, MPK_EXT, h[0]);
    case 0xc8: if (!(h = MP_TAKE(r, 3))) return MP_ETRUNC; it->ext = (int8_t)h[2];
        return mp_take_data(r, it, MPK_EXT, mp_be16(h));
    case 0xc9: if (!(h = MP_TAKE(r, 5))) return MP_ETRUNC; it->ext = (int8_t)h[4];
        return mp_take_data(r, it, MPK_EXT, mp_be32(h));
    case 0xca: {
        if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC;
        uint32_t bits = mp_be32(h);
        float f;
        memcpy(&f, &bits, 4);
        it->kind = MPK_FLOAT32;
        it->v.d = (double)f;
        return MP_OK;
    }
    case 0xcb: {
        if (!(h = MP_TAKE(r, 8))) return MP_ETRUNC;
        uint64_t bits = mp_be64(h);
        memcpy(&it->v.d, &bits, 8);
        it->kind = MPK_FLOAT64;
        return MP_OK;
    }
    case 0xcc: if (!(h = MP_TAKE(r, 1))) return MP_ETRUNC; it->kind = MPK_UINT; it->v.u = h[0]; return MP_OK;
    case 0xcd: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; it->kind = MPK_UINT; it->v.u = mp_be16(h); return MP_OK;
    case 0xce: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; it->kind = MPK_UINT; it->v.u = mp_be32(h); return MP_OK;
    case 0xcf: if (!(h = MP_TAKE(r, 8))) return MP_ETRUNC; it->kind = MPK_UINT; it->v.u = mp_be64(h); return MP_OK;
    case 0xd0: if (!(h = MP_TAKE(r, 1))) return MP_ETRUNC; return mp_set_int(it, (int8_t)h[0]);
    case 0xd1: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; return mp_set_int(it, (int16_t)mp_be16(h));
    case 0xd2: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; return mp_set_int(it, (int32_t)mp_be32(h));
    case 0xd3: if (!(h = MP_TAKE(r, 8))) return MP_ETRUNC; return mp_set_int(it, (int64_t)mp_be64(h));
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        if (!(h = MP_TAKE(r, 1))) return MP_ETRUNC;
        it->ext = (int8_t)h[0];
        return mp_take_data(r, it, MPK_EXT, 1u << (c - 0xd4));
    case 0xd9: if (!(h = MP_TAKE(r, 1))) return MP_ETRUNC; return mp_take_data(r, it, MPK_STR, h[0]);
    case 0xda: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; return mp_take_data(r, it, MPK_STR, mp_be16(h));
    case 0xdb: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; return mp_take_data(r, it, MPK_STR, mp_be32(h));
    case 0xdc: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; return mp_container(r, it, MPK_ARRAY, mp_be16(h), 1);
    case 0xdd: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; return mp_container(r, it, MPK_ARRAY, mp_be32(h), 1);
    case 0xde: if (!(h = MP_TAKE(r, 2))) return MP_ETRUNC; return mp_container(r, it, MPK_MAP, mp_be16(h), 2);
    case 0xdf: if (!(h = MP_TAKE(r, 4))) return MP_ETRUNC; return mp_container(r, it, MPK_MAP, mp_be32(h), 2);
    default: return MP_EBAD; /* unreachable: every byte value is covered above */
    }
}

/* Deepest nesting accepted, as msgpack-python's unpacker (its stack holds 1024 open containers). */
#define MP_MAX_DEPTH 1024

/* Flags mp_skip reports about the value it skipped. */
#define MPF_TOO_DEEP 1 /* nesting beyond max_depth (the skip failed with MP_EBAD) */
#define MPF_PY 2       /* holds something only the Python path renders: a non-uuid ext, a container map key */

/*
 * Skip the rest of a container whose header `first` was just read (first->n > 0), with everything nested in it,
 * without recursion: a stack of item counters, one per open container, replaces the call stack. Returns MP_OK,
 * MP_ETRUNC, or MP_EBAD (a 0xc1 byte, or more than `max_depth` open containers, which also sets MPF_TOO_DEEP).
 */
static int mp_skip_container(mp_rd *r, int max_depth, int *flags, const mp_item *first)
{
    uint64_t left[MP_MAX_DEPTH + 2];
    uint8_t is_map[MP_MAX_DEPTH + 2];
    mp_item it;
    if (max_depth > MP_MAX_DEPTH)
        max_depth = MP_MAX_DEPTH;
    if (max_depth < 1) {
        *flags |= MPF_TOO_DEEP;
        return MP_EBAD;
    }
    int depth = 1;
    left[0] = 0;
    is_map[0] = 0;
    is_map[1] = first->kind == MPK_MAP;
    left[1] = first->kind == MPK_MAP ? 2 * (uint64_t)first->n : first->n;
    for (;;) {
        while (depth >= 0 && left[depth] == 0)
            depth--;
        if (depth < 0)
            return MP_OK;
        int is_key = is_map[depth] && (left[depth] % 2 == 0);
        left[depth]--;
        int rc = mp_next(r, &it);
        if (rc)
            return rc;
        if (it.kind == MPK_ARRAY || it.kind == MPK_MAP) {
            if (is_key)
                *flags |= MPF_PY;
            if (it.n == 0)
                continue;
            if (depth + 1 > max_depth) {
                *flags |= MPF_TOO_DEEP;
                return MP_EBAD;
            }
            depth++;
            is_map[depth] = it.kind == MPK_MAP;
            left[depth] = it.kind == MPK_MAP ? 2 * (uint64_t)it.n : it.n;
        } else if (it.kind == MPK_EXT && !(it.ext == 2 && it.n == 16)) {
            *flags |= MPF_PY;
        }
    }
}

/*
 * Skip one complete value (with everything nested in it). Returns MP_OK, MP_ETRUNC, or MP_EBAD (a 0xc1 byte, or
 * more than `max_depth` open containers, which also sets MPF_TOO_DEEP in *flags). Scalars, the common case, are
 * skipped here; containers in mp_skip_container.
 */
static inline int mp_skip(mp_rd *r, int max_depth, int *flags)
{
    mp_item it;
    *flags = 0;
    int rc = mp_next(r, &it);
    if (rc)
        return rc;
    if (it.kind == MPK_ARRAY || it.kind == MPK_MAP)
        return it.n == 0 ? MP_OK : mp_skip_container(r, max_depth, flags, &it);
    if (it.kind == MPK_EXT && !(it.ext == 2 && it.n == 16))
        *flags |= MPF_PY;
    return MP_OK;
}

#endif
