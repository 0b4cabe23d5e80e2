/*
 * The writes view of YugabyteDB WAL segments: one row per DocDB key/value pair of a write batch, the twin of
 * docdb.py decode_pairs and of reader.py's writes columns (docs/formats/yugabyte-wal.md, "DocDB keys and values",
 * "Packed rows", "Rows"). doc_key and value are written as Spark Variants with the bytes arrow/variant.py gives the
 * reference's Python values (ints, doubles, strings, bytes, aware datetimes, lists and dicts).
 *
 * The declining rule of _kernel.h holds here too: a pair the reference would give a decode_error (any key or value
 * it cannot decode), a float32 NaN (whose bits Python's float may not keep), a column id outside int32, two
 * members of one object with the same name: the whole batch goes to the reference.
 *
 * The table schemas come from the reader's SchemaCatalog (catalog.py, through fast.py), as yb_catalog
 * (_kernel_tables.c).
 */
#include "_kernel.h"

#include <math.h>

#include "../_native/_encode.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../_native/_json_variant.h"
#pragma GCC diagnostic pop
#include "../_native/_text.h"

/* Node kinds beyond the JSON tree's (jv_node.num holds a double's bits or a timestamp's microseconds; a binary
 * value's bytes are in jv_ctx.text like a string's). */
enum { WN_DOUBLE = 16, WN_BIN, WN_TS };

/* Microseconds since the epoch of 0001-01-01 and of 9999-12-31T23:59:59.999999 (docdb.py _timestamp's range). */
#define YW_MIN_MICROS (-62135596800000000LL)
#define YW_MAX_MICROS (253402300799999999LL)

/* scratch state, reused from batch to batch (the kernel runs with the GIL held) */
static jv_ctx g_key, g_val;
static ls_buf g_pairs, g_live, g_vv, g_vm, g_kv, g_km;

void yb_writes_free(void)
{
    jv_free(&g_key);
    jv_free(&g_val);
    ls_buf_free(&g_pairs);
    ls_buf_free(&g_live);
    ls_buf_free(&g_vv);
    ls_buf_free(&g_vm);
    ls_buf_free(&g_kv);
    ls_buf_free(&g_km);
}

/* ---- the Variant tree ---- */

static int64_t node(jv_ctx *c, uint8_t kind, uint32_t key)
{
    if (ls_buf_reserve(&c->nodes, sizeof(jv_node)))
        return -1;
    jv_node *jn = (jv_node *)(c->nodes.data + c->nodes.len);
    memset(jn, 0, sizeof *jn);
    jn->kind = kind;
    jn->key = key;
    jn->size = 1;
    c->nodes.len += sizeof(jv_node);
    return (int64_t)(c->nodes.len / sizeof(jv_node) - 1);
}

static void close_container(jv_ctx *c, int64_t i, uint32_t count)
{
    jv_node *jn = jv_at(c, (uint32_t)i);
    jn->size = (uint32_t)(c->nodes.len / sizeof(jv_node) - (size_t)i);
    jn->count = count;
}

static uint32_t key_of(jv_ctx *c, const char *s, size_t n)
{
    jv_key k = {c->text.len, n, 0};
    if (ls_buf_put(&c->text, s, n) || ls_buf_put(&c->keys, &k, sizeof k))
        return JV_NO_KEY;
    return (uint32_t)(c->keys.len / sizeof(jv_key) - 1);
}

static int num_node(jv_ctx *c, uint8_t kind, __int128 num, uint32_t key)
{
    int64_t i = node(c, kind, key);
    if (i < 0)
        return YB_NOMEM;
    jv_at(c, (uint32_t)i)->num = num;
    return YB_OK;
}

/* A string (valid UTF-8, unless `binary`) or binary node of s[0..n), or of the text already at c->text[off..]. */
static int bytes_node(jv_ctx *c, const uint8_t *s, size_t n, int binary, uint32_t key)
{
    size_t off = c->text.len;
    int ascii;
    if (s != NULL && ls_buf_put(&c->text, s, n))
        return YB_NOMEM;
    if (s == NULL)
        off -= n;
    if (!binary && !utf8_valid(c->text.data + off, n, &ascii))
        binary = 1;
    int64_t i = node(c, binary ? WN_BIN : JN_STR, key);
    if (i < 0)
        return YB_NOMEM;
    jv_at(c, (uint32_t)i)->off = off;
    jv_at(c, (uint32_t)i)->len = n;
    return YB_OK;
}

static int encode(jv_ctx *c, uint32_t i, ls_buf *out);

/* A container (arrow/variant.py rules 8 and 9): the members' values in field-id order, the head in front. */
static int container(jv_ctx *c, uint32_t i, ls_buf *out)
{
    jv_node jn = *jv_at(c, i);
    int is_object = jn.kind == JN_OBJ;
    size_t count = jn.count, base = c->stack.len, need = count * (sizeof(uint32_t) * 2 + sizeof(uint64_t));
    if (ls_buf_reserve(&c->stack, need))
        return YB_NOMEM;
    c->stack.len += need;
    uint32_t *ids = (uint32_t *)(c->stack.data + base), *nodes = ids + count;
    const jv_key *keys = (const jv_key *)c->keys.data;
    uint32_t child = i + 1;
    for (size_t k = 0; k < count; k++) {
        const jv_node *ch = jv_at(c, child);
        size_t j = k;
        uint32_t id = is_object ? keys[ch->key].id : (uint32_t)k;
        while (is_object && j > 0 && ids[j - 1] > id) { /* few members: insertion sort by field id */
            ids[j] = ids[j - 1];
            nodes[j] = nodes[j - 1];
            j--;
        }
        if (is_object && j > 0 && ids[j - 1] == id)
            return YB_DECLINE; /* two members of one name: Python's dict keeps the last */
        ids[j] = id;
        nodes[j] = child;
        child += ch->size;
    }
    size_t data_start = out->len;
    for (size_t k = 0; k < count; k++) {
        uint64_t start = out->len - data_start;
        memcpy(c->stack.data + base + count * 8 + k * 8, &start, 8);
        int rc = encode(c, ((uint32_t *)(c->stack.data + base))[count + k], out);
        if (rc)
            return rc;
    }
    ids = (uint32_t *)(c->stack.data + base);
    const uint8_t *starts = c->stack.data + base + count * 8;
    size_t size = out->len - data_start;
    int offset_size = ls_size_of(size), id_size = is_object ? ls_size_of(count ? ids[count - 1] : 0) : 0;
    if (offset_size == 0 || count > 0xffffffffULL)
        return YB_DECLINE;
    uint8_t *p = ls_variant_head(out, data_start, count, id_size, offset_size);
    if (p == NULL)
        return YB_NOMEM;
    for (size_t k = 0; is_object && k < count; k++, p += id_size)
        ls_put_le(p, ids[k], id_size);
    for (size_t k = 0; k < count; k++, p += offset_size) {
        uint64_t start;
        memcpy(&start, starts + k * 8, 8);
        ls_put_le(p, start, offset_size);
    }
    ls_put_le(p, size, offset_size);
    c->stack.len = base;
    return YB_OK;
}

static int encode(jv_ctx *c, uint32_t i, ls_buf *out)
{
    const jv_node *jn = jv_at(c, i);
    switch (jn->kind) {
    case JN_NULL: return ls_buf_byte(out, VH_NULL) ? YB_NOMEM : YB_OK;
    case JN_TRUE: return ls_buf_byte(out, VH_TRUE) ? YB_NOMEM : YB_OK;
    case JN_FALSE: return ls_buf_byte(out, VH_FALSE) ? YB_NOMEM : YB_OK;
    case JN_STR: {
        int rc = ls_variant_str(out, c->text.data + jn->off, jn->len);
        return rc < 0 ? YB_NOMEM : rc ? YB_DECLINE : YB_OK;
    }
    case WN_BIN:
        if (jn->len > 0xffffffffULL)
            return YB_DECLINE;
        return ls_buf_byte(out, VH_BINARY) || ls_buf_le(out, jn->len, 4) || ls_buf_put(out, c->text.data + jn->off, jn->len)
                   ? YB_NOMEM : YB_OK;
    case WN_DOUBLE:
    case WN_TS:
        return ls_buf_byte(out, jn->kind == WN_TS ? VH_TIMESTAMP : VH_DOUBLE) || ls_buf_le(out, (uint64_t)jn->num, 8)
                   ? YB_NOMEM : YB_OK;
    case JN_INT:
        if (jn->num >= INT64_MIN && jn->num <= INT64_MAX)
            return ls_variant_int(out, (int64_t)jn->num) ? YB_NOMEM : YB_OK;
        /* arrow/variant.py _int: above int64 (a uint64 here), decimal16 with scale 0 */
        return ls_buf_byte(out, VH_DECIMAL16) || ls_buf_byte(out, 0) || ls_buf_le(out, (uint64_t)jn->num, 8)
                   || ls_buf_le(out, (uint64_t)((unsigned __int128)jn->num >> 64), 8) ? YB_NOMEM : YB_OK;
    default:
        return container(c, i, out);
    }
}

static void tree_reset(jv_ctx *c) { c->nodes.len = c->keys.len = c->text.len = c->stack.len = 0; }

/* The tree's Variant: value appended to value, metadata to meta. */
static int tree_variant(jv_ctx *c, ls_buf *value, ls_buf *meta)
{
    int rc = jv_metadata(c, meta);
    if (rc)
        return rc == JV_NOMEM ? YB_NOMEM : YB_DECLINE;
    return encode(c, 0, value);
}

/* ---- varints (docdb.py read_signed_varint / read_unsigned_varint) ---- */

static int prefix_length(uint8_t first)
{
    int n = 1;
    for (uint8_t mask = 0x80; mask && (first & mask); mask >>= 1)
        n++;
    return n;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = v << 8 | p[k];
    return v;
}

static int signed_varint(const uint8_t *b, size_t *pos, size_t end, int64_t *out)
{
    if (*pos >= end)
        return YB_DECLINE;
    uint8_t first = b[*pos];
    int negative = !(first & 0x80);
    if (negative)
        first ^= 0xFF;
    int n = prefix_length((uint8_t)(first << 1));
    if (n > 7 || (size_t)n > end - *pos)
        return YB_DECLINE;
    uint64_t raw = be(b + *pos, n);
    if (negative)
        raw ^= ((uint64_t)1 << (8 * n)) - 1;
    int64_t value = (int64_t)(raw & (((uint64_t)1 << (8 * n - n - 1)) - 1));
    *out = negative ? -value : value;
    *pos += (size_t)n;
    return YB_OK;
}

static int unsigned_varint(const uint8_t *b, size_t *pos, size_t end, uint64_t *out)
{
    if (*pos >= end)
        return YB_DECLINE;
    int n = prefix_length(b[*pos]);
    if (n > 8 || (size_t)n > end - *pos)
        return YB_DECLINE;
    *out = be(b + *pos, n) & (((uint64_t)1 << (8 * n - n)) - 1);
    *pos += (size_t)n;
    return YB_OK;
}

/* ---- keys (docdb.py read_key_component, decode_doc_key) ---- */

static int timestamp_node(jv_ctx *c, int64_t micros, uint32_t key)
{
    if (micros < YW_MIN_MICROS || micros > YW_MAX_MICROS)
        return YB_DECLINE;
    return num_node(c, WN_TS, micros, key);
}

static int float_node(jv_ctx *c, uint32_t bits, uint32_t key)
{
    float f;
    memcpy(&f, &bits, 4);
    if (isnan(f))
        return YB_DECLINE;
    double d = f;
    uint64_t u;
    memcpy(&u, &d, 8);
    return num_node(c, WN_DOUBLE, (__int128)u, key);
}

/* An order-preserving string (00 escaped as 00 01, ended by 00 00; all inverted when descending) into c->text. */
static int key_string(jv_ctx *c, const uint8_t *b, size_t *pos, size_t end, int descending, int emit)
{
    uint8_t zero = descending ? 0xFF : 0x00, escape = descending ? 0xFE : 0x01;
    size_t p = *pos, n = 0;
    for (;;) {
        const uint8_t *hit = p < end ? memchr(b + p, zero, end - p) : NULL;
        if (hit == NULL || (size_t)(hit - b) + 1 >= end)
            return YB_DECLINE;
        size_t h = (size_t)(hit - b);
        uint8_t marker = b[h + 1];
        if (marker != zero && marker != escape)
            return YB_DECLINE;
        if (emit && (ls_buf_put(&c->text, b + p, h - p) || (marker == escape && ls_buf_byte(&c->text, zero))))
            return YB_NOMEM;
        n += h - p + (marker == escape);
        p = h + 2;
        if (marker == zero)
            break;
    }
    *pos = p;
    if (!emit)
        return YB_OK;
    if (descending)
        for (size_t k = c->text.len - n; k < c->text.len; k++)
            c->text.data[k] ^= 0xFF;
    return bytes_node(c, NULL, n, 0, JV_NO_KEY);
}

static int key_component(jv_ctx *c, const uint8_t *b, size_t *pos, size_t end, int emit)
{
    uint8_t t = b[(*pos)++];
    int width = 0, descending = 0;
    switch (t) {
    case 'S': case 'a': return key_string(c, b, pos, end, t == 'a', emit);
    case 'H': case 'e': case 'O': case 'g': case 'C': case 'M': width = 4; descending = t == 'e' || t == 'g' || t == 'M'; break;
    case 'I': case 'b': case 's': case 'c': case 'U': case 'j': case 'D': case 'L':
        width = 8;
        descending = t == 'b' || t == 'c' || t == 'j' || t == 'L';
        break;
    case 'T': case 'h': return emit && node(c, JN_TRUE, JV_NO_KEY) < 0 ? YB_NOMEM : YB_OK;
    case 'F': case 'i': return emit && node(c, JN_FALSE, JV_NO_KEY) < 0 ? YB_NOMEM : YB_OK;
    case '$': case '|': return emit && node(c, JN_NULL, JV_NO_KEY) < 0 ? YB_NOMEM : YB_OK;
    default: return YB_DECLINE;
    }
    if ((size_t)width > end - *pos)
        return YB_DECLINE;
    uint64_t raw = be(b + *pos, width), mask = width == 8 ? UINT64_MAX : 0xFFFFFFFFu;
    *pos += (size_t)width;
    if (descending)
        raw = ~raw & mask;
    uint64_t sign = (uint64_t)1 << (8 * width - 1);
    if (!emit) /* the first pass wants only the key's end and subkey; the second one emits (and declines) */
        return YB_OK;
    if (t == 's' || t == 'c')
        return timestamp_node(c, (int64_t)(raw ^ sign), JV_NO_KEY);
    if (t == 'D' || t == 'L' || t == 'C' || t == 'M') {
        raw = raw & sign ? raw ^ sign : ~raw & mask; /* docdb.py _float_key */
        return width == 4 ? float_node(c, (uint32_t)raw, JV_NO_KEY) : num_node(c, WN_DOUBLE, (__int128)raw, JV_NO_KEY);
    }
    __int128 v = (__int128)raw;
    if (t == 'H' || t == 'e')
        v = (int32_t)(uint32_t)(raw ^ sign);
    else if (t == 'I' || t == 'b')
        v = (int64_t)(raw ^ sign);
    return num_node(c, JN_INT, v, JV_NO_KEY);
}

enum { SUB_NONE, SUB_COLUMN, SUB_SYSTEM, SUB_OTHER };

typedef struct {
    const uint8_t *key, *value;
    size_t key_len, value_len, end; /* end: just after the doc key's last '!' */
    int64_t sub_id;
    int sub;
} yw_pair;

/* Components up to the group end '!': an array member `name` (emit), *count of them. */
static int components(jv_ctx *c, const uint8_t *b, size_t *pos, size_t end, const char *name, int emit, size_t *count)
{
    int64_t arr = -1;
    uint32_t key = emit ? key_of(c, name, strlen(name)) : 0;
    if (emit && (key == JV_NO_KEY || (arr = node(c, JN_ARR, key)) < 0))
        return YB_NOMEM;
    *count = 0;
    for (;;) {
        if (*pos >= end)
            return YB_DECLINE;
        if (b[*pos] == '!') {
            (*pos)++;
            break;
        }
        int rc = key_component(c, b, pos, end, emit);
        if (rc)
            return rc;
        (*count)++;
    }
    if (emit)
        close_container(c, arr, (uint32_t)*count);
    return YB_OK;
}

/* The doc key of p->key and its subkey (p->end, p->sub, p->sub_id); with emit, the doc_key tree into c. */
static int doc_key(jv_ctx *c, yw_pair *p, const yb_schema *cur, int emit)
{
    const uint8_t *b = p->key;
    size_t end = p->key_len, pos = 0, nhashed = 0, nrange = 0;
    int64_t root = -1, hashed = -1, range;
    if (emit) {
        tree_reset(c);
        if ((root = node(c, JN_OBJ, JV_NO_KEY)) < 0)
            return YB_NOMEM;
    }
    uint32_t members = 3, k;
    int rc;
    if (end > 0 && (b[0] == '0' || b[0] == 'y')) {
        size_t n = b[0] == '0' ? 4 : 16;
        if (1 + n > end)
            return YB_DECLINE;
        if (emit) {
            members++;
            if (b[0] == '0') {
                rc = (k = key_of(c, "colocation_id", 13)) == JV_NO_KEY ? YB_NOMEM : num_node(c, JN_INT, be(b + 1, 4), k);
            } else {
                size_t off = c->text.len;
                rc = (k = key_of(c, "cotable_id", 10)) == JV_NO_KEY || put_uuid_text(&c->text, b + 1) ? YB_NOMEM
                     : bytes_node(c, NULL, c->text.len - off - 10, 0, k);
            }
            if (rc)
                return rc;
        }
        pos = 1 + n;
    }
    int has_hash = pos < end && b[pos] == 'G';
    if (has_hash && 3 > end - pos)
        return YB_DECLINE;
    if (emit && ((k = key_of(c, "hash", 4)) == JV_NO_KEY
                 || (has_hash ? num_node(c, JN_INT, be(b + pos + 1, 2), k) : num_node(c, JN_NULL, 0, k))))
        return YB_NOMEM;
    if (has_hash) {
        pos += 3;
        hashed = (int64_t)(c->nodes.len / sizeof(jv_node));
        if ((rc = components(c, b, &pos, end, "hashed", emit, &nhashed)))
            return rc;
    } else if (emit) {
        int64_t a = -1;
        if ((k = key_of(c, "hashed", 6)) == JV_NO_KEY || (a = node(c, JN_ARR, k)) < 0)
            return YB_NOMEM;
        close_container(c, a, 0);
    }
    range = (int64_t)(c->nodes.len / sizeof(jv_node));
    if ((rc = components(c, b, &pos, end, "range", emit, &nrange)))
        return rc;
    p->end = pos;
    p->sub = SUB_NONE;
    if (pos < end) {
        size_t q = pos + 1;
        p->sub = b[pos] == 'K' ? SUB_COLUMN : b[pos] == 'J' ? SUB_SYSTEM : SUB_OTHER;
        if (p->sub != SUB_OTHER && (rc = signed_varint(b, &q, end, &p->sub_id)))
            return rc;
    }
    if (!emit)
        return YB_OK;
    if (cur != NULL && nhashed == cur->nhash && nrange == cur->nrange) {
        /* "key": the key columns by name, the same values again */
        int64_t obj;
        if ((k = key_of(c, "key", 3)) == JV_NO_KEY || (obj = node(c, JN_OBJ, k)) < 0)
            return YB_NOMEM;
        for (size_t j = 0; j < nhashed + nrange; j++) {
            uint32_t from = (uint32_t)(j < nhashed ? hashed + 1 + (int64_t)j : range + 1 + (int64_t)(j - nhashed));
            uint32_t name = key_of(c, cur->keys[j].name, cur->keys[j].len);
            int64_t i = name == JV_NO_KEY ? -1 : node(c, JN_NULL, name);
            if (i < 0)
                return YB_NOMEM;
            *jv_at(c, (uint32_t)i) = *jv_at(c, from);
            jv_at(c, (uint32_t)i)->key = name;
        }
        close_container(c, obj, (uint32_t)(nhashed + nrange));
        members++;
    }
    close_container(c, root, members);
    return YB_OK;
}

/* ---- values (docdb.py decode_value, _body, decode_packed_row) ---- */

/* A primitive body: its type byte at b[pos], filling b[pos..end). */
static int body(jv_ctx *c, const uint8_t *b, size_t pos, size_t end, int binary, uint32_t key)
{
    uint8_t t = b[pos];
    size_t size = end - pos - 1;
    const uint8_t *p = b + pos + 1;
    int width = 0;
    switch (t) {
    case 'S': case '\\': return bytes_node(c, p, size, binary, key);
    case 'H': case 'O': case 'C': width = 4; break;
    case 'I': case 'U': case 'D': case 's': width = 8; break;
    case 'T': case 'F':
        if (size)
            return YB_DECLINE;
        return node(c, t == 'T' ? JN_TRUE : JN_FALSE, key) < 0 ? YB_NOMEM : YB_OK;
    case '$': return node(c, JN_NULL, key) < 0 ? YB_NOMEM : YB_OK;
    case '2': return size < 8 ? YB_DECLINE : bytes_node(c, p + 8, size - 8, 1, key);
    case '_': {
        if (size != 16)
            return YB_DECLINE;
        size_t off = c->text.len;
        if (put_uuid_text(&c->text, p))
            return YB_NOMEM;
        return bytes_node(c, NULL, c->text.len - off, 0, key);
    }
    default: return YB_DECLINE;
    }
    if (size != (size_t)width)
        return YB_DECLINE;
    uint64_t raw = be(p, width);
    switch (t) {
    case 'H': return num_node(c, JN_INT, (int32_t)(uint32_t)raw, key);
    case 'I': return num_node(c, JN_INT, (int64_t)raw, key);
    case 'O': case 'U': return num_node(c, JN_INT, (__int128)raw, key);
    case 'C': return float_node(c, (uint32_t)raw, key);
    case 'D': return num_node(c, WN_DOUBLE, (__int128)raw, key);
    default: return timestamp_node(c, (int64_t)raw, key);
    }
}

typedef struct {
    int tombstone, packed;
    uint64_t version;
} yw_value;

static int packed_row(jv_ctx *c, const uint8_t *b, size_t pos, size_t end, const yb_catalog *cat, yw_value *v)
{
    size_t p = pos + 1;
    int rc = unsigned_varint(b, &p, end, &v->version);
    if (rc)
        return rc;
    const yb_schema *s = yb_schema_of_version(cat, v->version);
    if (s == NULL || s->nvarlen > (end - p) / 4)
        return YB_DECLINE;
    const uint8_t *ends = b + p;
    size_t data = p + 4 * s->nvarlen, size = end - data, cur = 0, vi = 0;
    int64_t obj = node(c, JN_OBJ, JV_NO_KEY);
    if (obj < 0)
        return YB_NOMEM;
    for (size_t k = 0; k < s->npacked; k++) {
        const yb_col *col = &s->packed[k];
        uint64_t stop;
        if (col->size < 0) {
            uint32_t e;
            memcpy(&e, ends + 4 * vi++, 4);
            stop = e;
        } else {
            stop = cur + (uint64_t)col->size;
        }
        if (stop < cur || stop > size)
            return YB_DECLINE;
        uint32_t key = key_of(c, col->name, col->len);
        if (key == JV_NO_KEY)
            return YB_NOMEM;
        rc = stop == cur ? (node(c, JN_NULL, key) < 0 ? YB_NOMEM : YB_OK)
                         : body(c, b, data + cur, data + (size_t)stop, col->binary, key);
        if (rc)
            return rc;
        cur = (size_t)stop;
    }
    if (cur != size)
        return YB_DECLINE;
    close_container(c, obj, (uint32_t)s->npacked);
    v->packed = 1;
    return YB_OK;
}

static int value_tree(jv_ctx *c, const uint8_t *b, size_t end, int binary, const yb_catalog *cat, yw_value *v)
{
    size_t pos = 0;
    uint64_t u;
    int64_t i;
    tree_reset(c);
    *v = (yw_value){0, 0, 0};
    if (pos < end && b[pos] == 'k') {
        pos++;
        if (unsigned_varint(b, &pos, end, &u))
            return YB_DECLINE;
    }
    if (pos < end && b[pos] == 't') {
        pos++;
        if (signed_varint(b, &pos, end, &i))
            return YB_DECLINE;
    }
    if (pos < end && b[pos] == 'u') {
        if (9 > end - pos)
            return YB_DECLINE;
        pos += 9;
    }
    if (pos >= end)
        return YB_DECLINE;
    switch (b[pos]) {
    case 'X':
        v->tombstone = 1;
        return node(c, JN_NULL, JV_NO_KEY) < 0 ? YB_NOMEM : YB_OK;
    case 'z': return packed_row(c, b, pos, end, cat, v);
    case '|': return YB_DECLINE;
    default: return body(c, b, pos, end, binary, JV_NO_KEY);
    }
}

/* ---- the rows ---- */

static int cmp_live(const void *a, const void *b)
{
    const yw_pair *x = a, *y = b;
    size_t n = x->end < y->end ? x->end : y->end;
    int r = n ? memcmp(x->key, y->key, n) : 0;
    return r ? r : (x->end > y->end) - (x->end < y->end);
}

static int text_col(yb_rows *r, int column, const void *s, size_t n, int present)
{
    return present ? yb_row_value(r, column, s, n) : yb_row_null(r, column);
}

static const char *const KINDS[] = {"insert_packed", "delete_row", "row", "liveness", "set_null", "insert_column",
                                    "update_column", "other"};

int yb_write_rows(const uint8_t *b, const yb_rec *wb, const yb_row *entry, const uint8_t *txn, size_t txn_len,
                  yb_rows *r, const yb_catalog *cat)
{
    if ((entry->flags & YR_INDEX)
        && ((cat->has_low && entry->index < cat->low) || (cat->has_high && entry->index > cat->high)))
        return YB_OK; /* reader.py _in_range: kept in the queue, no rows */
    const yb_schema *cur = cat->current >= 0 ? &cat->items[cat->current] : NULL;
    g_pairs.len = g_live.len = 0;
    /* the pairs (KeyValueWriteBatchPB field 1), each key's end and subkey; the liveness columns' doc keys */
    size_t pos = wb->begin;
    while (pos < wb->stop) {
        yb_rec f;
        uint64_t key = 0, v = 0;
        int shift = 0;
        while (pos < wb->stop && (b[pos] & 0x80) && shift < 63)
            key |= (uint64_t)(b[pos++] & 0x7F) << shift, shift += 7;
        if (pos >= wb->stop)
            return YB_DECLINE;
        key |= (uint64_t)b[pos++] << shift;
        /* the message was checked (yb_check_message): the field parses; its end is the next field */
        size_t next = pos;
        yb_rec probe;
        if ((key & 7) == 2) {
            shift = 0;
            while (next < wb->stop && (b[next] & 0x80) && shift < 63)
                v |= (uint64_t)(b[next++] & 0x7F) << shift, shift += 7;
            if (next >= wb->stop)
                return YB_DECLINE;
            v |= (uint64_t)b[next++] << shift;
            if (v > wb->stop - next) /* checked before (yb_check_message); kept so no length can wrap */
                return YB_DECLINE;
            f.begin = next;
            f.stop = next + (size_t)v;
            next = f.stop;
        } else if ((key & 7) == 0) {
            while (next < wb->stop && (b[next] & 0x80))
                next++;
            next++;
        } else {
            next += (key & 7) == 1 ? 8 : 4;
        }
        if (next > wb->stop)
            return YB_DECLINE;
        pos = next;
        if (key >> 3 != 1)
            continue;
        if ((key & 7) != 2)
            return YB_DECLINE;
        yw_pair p = {0};
        if (yb_last_field(b, f.begin, f.stop, 1, &probe)) {
            p.key = b + probe.begin;
            p.key_len = probe.stop - probe.begin;
        }
        if (yb_last_field(b, f.begin, f.stop, 2, &probe)) {
            p.value = b + probe.begin;
            p.value_len = probe.stop - probe.begin;
        }
        /* a key or value tree takes ~50 bytes a one-byte component: past the JSON kernel's cap, Python reads it */
        if (p.key_len > JV_MAX_TEXT || p.value_len > JV_MAX_TEXT)
            return YB_DECLINE;
        int rc = doc_key(&g_key, &p, cur, 0);
        if (rc || ls_buf_put(&g_pairs, &p, sizeof p))
            return rc ? rc : YB_NOMEM;
        if (p.sub == SUB_SYSTEM && p.sub_id == 0 && ls_buf_put(&g_live, &p, sizeof p))
            return YB_NOMEM;
    }
    size_t npairs = g_pairs.len / sizeof(yw_pair), nlive = g_live.len / sizeof(yw_pair);
    if (npairs > INT32_MAX)
        return YB_DECLINE;
    if (nlive > 1)
        qsort(g_live.data, nlive, sizeof(yw_pair), cmp_live);
    for (size_t k = 0; k < npairs; k++) {
        yw_pair *p = &((yw_pair *)g_pairs.data)[k];
        const yb_col *col = NULL;
        if (p->sub == SUB_COLUMN) {
            if (p->sub_id < INT32_MIN || p->sub_id > INT32_MAX)
                return YB_DECLINE;
            col = cur ? yb_column_by_id(cur, p->sub_id) : NULL;
        }
        yw_value v;
        int rc = value_tree(&g_val, p->value, p->value_len, col ? col->binary : 0, cat, &v);
        if (rc)
            return rc;
        int kind;
        if (v.packed)
            kind = 0;
        else if (p->sub == SUB_NONE)
            kind = v.tombstone ? 1 : 2;
        else if (p->sub == SUB_SYSTEM && p->sub_id == 0)
            kind = 3;
        else if (p->sub == SUB_COLUMN)
            kind = v.tombstone ? 4 : bsearch(p, g_live.data, nlive, sizeof(yw_pair), cmp_live) ? 5 : 6;
        else
            kind = 7;
        int null_value = kind == 1 || kind == 3 || kind == 4; /* reader.py: no value for these kinds */
        g_vv.len = g_vm.len = g_kv.len = g_km.len = 0;
        if (!null_value && (rc = tree_variant(&g_val, &g_vv, &g_vm)))
            return rc;
        if ((rc = doc_key(&g_key, p, cur, 1)) || (rc = tree_variant(&g_key, &g_kv, &g_km)))
            return rc;
        yb_row row = *entry;
        row.pair_index = (int32_t)k;
        row.flags |= YR_PAIR | YR_TOMB | YR_KIND | YR_KEY | (v.tombstone ? YR_TOMBV : 0) | (null_value ? 0 : YR_VAL);
        if (p->sub == SUB_COLUMN) {
            row.column_id = (int32_t)p->sub_id;
            row.flags |= YR_COLID | (col ? YR_COLNAME : 0);
        }
        if (v.packed && v.version > INT64_MAX)
            return YB_DECLINE;
        if (v.packed || (cur && cur->has_version)) {
            row.schema_version = v.packed ? (int64_t)v.version : cur->version;
            row.flags |= YR_SV;
        }
        const char *kname = KINDS[kind];
        size_t nrow = yb_nrows(r);
        if ((rc = yb_row_null(r, YC_OPTYPE)) || (rc = text_col(r, YC_TXN, txn, txn_len, row.flags & YR_TXN))
            || (rc = yb_row_null(r, YC_STATUS)) || (rc = yb_row_value(r, YC_VALUE, g_vv.data, g_vv.len))
            || (rc = yb_row_value(r, YC_META, g_vm.data, g_vm.len)) || (rc = yb_row_null(r, YC_MESSAGE))
            || (rc = text_col(r, YC_COLNAME, col ? col->name : NULL, col ? col->len : 0, col != NULL))
            || (rc = yb_row_value(r, YC_KIND, (const uint8_t *)kname, strlen(kname))) || (rc = yb_row_null(r, YC_ERROR))
            || (rc = yb_row_value(r, YC_KEYV, g_kv.data, g_kv.len)) || (rc = yb_row_value(r, YC_KEYM, g_km.data, g_km.len))
            || (rc = yb_row_value(r, YC_RAWK, p->key, p->key_len))
            || (rc = yb_row_value(r, YC_RAWV, p->value, p->value_len)))
            return rc;
        row.size = 0;
        for (int c = 0; c < r->ncols; c++)
            row.size += yb_end_at(r, c, nrow) - yb_start_at(r, c, nrow);
        if (ls_buf_put(&r->rows, &row, sizeof row))
            return YB_NOMEM;
    }
    return YB_OK;
}
