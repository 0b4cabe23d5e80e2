/*
 * YugabyteDB WAL entry batches → rows: the protobuf wire format (docs/formats/yugabyte-wal.md, "Protobuf wire
 * format"), the messages by field number as messages.py describes them (handed over once by yb_set_specs), and the
 * ``details`` column written as a Spark Variant through the shared JSON-tree encoder (_native/_json_variant.h: the
 * same canonical bytes as arrow/variant.py encode_variant).
 *
 * A message is decoded in two steps: its fields are collected into records (wire type, value or byte range) and
 * sorted by field number, keeping wire order within one number; each field number then becomes one member of the
 * object (a repeated field one array, in wire order). This is what the reference's dict gives, whatever the order
 * of the fields on the wire. Where the reference would raise, or keep the last of a repeated non-repeated field,
 * the whole batch is declined (see _kernel.h).
 */
#include "_kernel.h"

#include "../_native/_encode.h"
/* its text parser (jv_convert) is not used here: only the tree encoder */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../_native/_json_variant.h"
#pragma GCC diagnostic pop
#include "../_native/_text.h"

/* scratch state, reused from batch to batch (the kernel runs with the GIL held) */
static ls_buf g_recs;
static jv_ctx g_jv;
static ls_buf g_value, g_meta;

void yb_proto_free(void)
{
    yb_specs_free();
    ls_buf_free(&g_recs);
    ls_buf_free(&g_value);
    ls_buf_free(&g_meta);
    jv_free(&g_jv);
}

/* ---- wire format ---- */

enum { W_VARINT = 0, W_FIXED64 = 1, W_LEN = 2, W_FIXED32 = 5 };

static inline int wire_of(int kind)
{
    switch (kind) {
    case YK_FIXED64: case YK_DOUBLE: return W_FIXED64;
    case YK_FIXED32: case YK_FLOAT: return W_FIXED32;
    case YK_BYTES: case YK_STRING: case YK_ID: case YK_UUID: case YK_RAW: case YK_MESSAGE: return W_LEN;
    default: return W_VARINT;
    }
}

/* proto.py read_varint: at most 10 bytes, the value kept to 64 bits. */
static inline int varint(const uint8_t *b, size_t *pos, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    size_t p = *pos;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return -1;
        uint8_t c = b[p++];
        v |= (uint64_t)(c & 0x7F) << (7 * i); /* the 10th byte: only its lowest bit stays within 64 bits */
        if (c < 0x80) {
            *pos = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

#define REC(k) (((yb_rec *)g_recs.data)[k])

static int cmp_rec(const void *a, const void *b)
{
    const yb_rec *x = a, *y = b;
    if (x->number != y->number)
        return x->number < y->number ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The fields of b[start..end) pushed onto g_recs, sorted by number (wire order within one number). */
static int collect(const uint8_t *b, size_t start, size_t end, size_t *count)
{
    size_t pos = start, n = 0, base = g_recs.len / sizeof(yb_rec);
    while (pos < end) {
        uint64_t key, v = 0;
        if (varint(b, &pos, end, &key))
            return YB_DECLINE;
        yb_rec r = {key >> 3, 0, 0, 0, (uint32_t)n, (uint8_t)(key & 7)};
        if (r.number == 0)
            return YB_DECLINE;
        switch (r.wire) {
        case W_VARINT:
            if (varint(b, &pos, end, &v))
                return YB_DECLINE;
            r.value = v;
            break;
        case W_FIXED64:
            if (end - pos < 8)
                return YB_DECLINE;
            memcpy(&r.value, b + pos, 8);
            pos += 8;
            break;
        case W_FIXED32: {
            uint32_t w;
            if (end - pos < 4)
                return YB_DECLINE;
            memcpy(&w, b + pos, 4);
            r.value = w;
            pos += 4;
            break;
        }
        case W_LEN:
            if (varint(b, &pos, end, &v) || v > end - pos)
                return YB_DECLINE;
            r.begin = pos;
            r.stop = pos + (size_t)v;
            pos = r.stop;
            break;
        default:
            return YB_DECLINE;
        }
        if (ls_buf_put(&g_recs, &r, sizeof r))
            return YB_NOMEM;
        n++;
    }
    /* insertion sort for the usual few fields, mostly in order already; qsort (by number, then wire order) for
     * many, so that a crafted message of millions of fields costs n log n, not n^2 */
    yb_rec *recs = &REC(base);
    if (n > 64) {
        qsort(recs, n, sizeof *recs, cmp_rec);
        *count = n;
        return YB_OK;
    }
    for (size_t i = 1; i < n; i++) {
        yb_rec x = recs[i];
        size_t j = i;
        while (j > 0 && recs[j - 1].number > x.number) {
            recs[j] = recs[j - 1];
            j--;
        }
        recs[j] = x;
    }
    *count = n;
    return YB_OK;
}

/* ---- the details tree (jv_node in preorder, _json_variant.h) ---- */

static int64_t push_node(uint8_t kind, uint32_t key)
{
    if (ls_buf_reserve(&g_jv.nodes, sizeof(jv_node)))
        return -1;
    jv_node *node = (jv_node *)(g_jv.nodes.data + g_jv.nodes.len);
    memset(node, 0, sizeof *node);
    node->kind = kind;
    node->key = key;
    node->size = 1;
    g_jv.nodes.len += sizeof(jv_node);
    return (int64_t)(g_jv.nodes.len / sizeof(jv_node) - 1);
}

static void close_node(int64_t i, uint32_t count)
{
    jv_node *node = jv_at(&g_jv, (uint32_t)i);
    node->size = (uint32_t)(g_jv.nodes.len / sizeof(jv_node) - (size_t)i);
    node->count = count;
}

/* A key given as text (a field name, or field_<n>): its index in g_jv.keys, or JV_NO_KEY when out of memory. */
static uint32_t add_key(const char *s, size_t n)
{
    jv_key k = {g_jv.text.len, n, 0};
    if (ls_buf_put(&g_jv.text, s, n) || ls_buf_put(&g_jv.keys, &k, sizeof k))
        return JV_NO_KEY;
    return (uint32_t)(g_jv.keys.len / sizeof(jv_key) - 1);
}

static uint32_t field_key(const yb_field *f, uint64_t number)
{
    if (f != NULL)
        return add_key(f->name, f->name_len);
    char name[32] = "field_";
    int n = u64_text(name + 6, number);
    return add_key(name, 6 + (size_t)n);
}

static const char HEX[] = "0123456789abcdef";

/* Text for the bytes b[0..n) by a length-delimited kind (proto.py _LEN_SCALARS): appended to out. */
static int len_text(ls_buf *out, int kind, const uint8_t *b, size_t n)
{
    int ascii;
    if (kind == YK_STRING && utf8_valid(b, n, &ascii))
        return ls_buf_put(out, b, n) ? YB_NOMEM : YB_OK;
    if (kind == YK_ID) {
        size_t k = 0;
        while (k < n && b[k] >= 0x20 && b[k] < 0x7F)
            k++;
        if (k == n)
            return ls_buf_put(out, b, n) ? YB_NOMEM : YB_OK;
    }
    if (kind == YK_UUID && n == 16)
        return put_uuid_text(out, b) ? YB_NOMEM : YB_OK;
    if (ls_buf_reserve(out, 2 * n))
        return YB_NOMEM;
    uint8_t *d = out->data + out->len;
    for (size_t k = 0; k < n; k++) {
        d[2 * k] = (uint8_t)HEX[b[k] >> 4];
        d[2 * k + 1] = (uint8_t)HEX[b[k] & 15];
    }
    out->len += 2 * n;
    return YB_OK;
}

/* One scalar node: field f (NULL: an unknown field) of wire type `wire`. */
static int scalar_node(const yb_field *f, int wire, uint64_t value, const uint8_t *b, size_t begin, size_t stop,
                       uint32_t key)
{
    int kind = f ? f->kind : (wire == W_LEN ? YK_BYTES : YK_UINT64);
    if (kind == YK_RAW || kind == YK_DOUBLE || kind == YK_FLOAT)
        return YB_DECLINE; /* no such field in a row's details (binary and floats have no node kind here) */
    int64_t i;
    if (wire == W_LEN) {
        size_t off = g_jv.text.len;
        int rc = len_text(&g_jv.text, kind, b + begin, stop - begin);
        if (rc)
            return rc;
        if ((i = push_node(JN_STR, key)) < 0)
            return YB_NOMEM;
        jv_node *node = jv_at(&g_jv, (uint32_t)i);
        node->off = off;
        node->len = g_jv.text.len - off;
        return YB_OK;
    }
    if (kind == YK_BOOL)
        return push_node(value ? JN_TRUE : JN_FALSE, key) < 0 ? YB_NOMEM : YB_OK;
    __int128 num = (__int128)value; /* uint64 / uint32 / fixed64 / fixed32 / unknown: the wire value itself */
    if (kind == YK_INT64)
        num = (int64_t)value;
    else if (kind == YK_INT32 || kind == YK_ENUM)
        num = (int32_t)(uint32_t)value;
    if (kind == YK_ENUM) {
        const yb_enum_item *it = yb_find_enum(f->enm, (int64_t)num);
        if (it != NULL) {
            size_t off = g_jv.text.len;
            if (ls_buf_put(&g_jv.text, it->name, it->len) || (i = push_node(JN_STR, key)) < 0)
                return YB_NOMEM;
            jv_node *node = jv_at(&g_jv, (uint32_t)i);
            node->off = off;
            node->len = it->len;
            return YB_OK;
        }
    }
    if ((i = push_node(JN_INT, key)) < 0)
        return YB_NOMEM;
    jv_at(&g_jv, (uint32_t)i)->num = num;
    return YB_OK;
}

static int message_node(long msg, const uint8_t *b, size_t start, size_t end, int depth, uint32_t key, int emit);

/* The elements of one occurrence of a repeated scalar field sent packed (proto.py _packed). */
static int packed_nodes(const yb_field *f, const uint8_t *b, size_t begin, size_t stop, uint32_t *count, int emit)
{
    int w = wire_of(f->kind);
    size_t pos = begin;
    while (pos < stop) {
        uint64_t v;
        if (w == W_VARINT) {
            if (varint(b, &pos, stop, &v))
                return YB_DECLINE;
        } else if (w == W_FIXED64) {
            if (stop - pos < 8)
                return YB_DECLINE;
            memcpy(&v, b + pos, 8);
            pos += 8;
        } else {
            uint32_t v32;
            if (stop - pos < 4)
                return YB_DECLINE;
            memcpy(&v32, b + pos, 4);
            v = v32;
            pos += 4;
        }
        int rc = emit ? scalar_node(f, w, v, b, 0, 0, JV_NO_KEY) : (f->kind == YK_DOUBLE || f->kind == YK_FLOAT);
        if (rc)
            return rc;
        (*count)++;
    }
    return YB_OK;
}

/* The records [lo, hi) of one field number, as one member (emit) or only checked. */
static int field_member(long msg, size_t lo, size_t hi, const uint8_t *b, int depth, int emit, uint32_t *members)
{
    uint64_t number = REC(lo).number;
    const yb_field *f = yb_find_field(msg, number);
    size_t n = hi - lo;
    if (f != NULL && !f->repeated && n > 1)
        return YB_DECLINE; /* the reference keeps the last one: rare, left to it */
    /* fields whose values are columns, not details; pairs given as their count (messages.py _entry, _pairs) */
    int pulled = msg == g_replicate && (number == 1 || number == 2 || number == 4 || number == 8);
    int counted = msg == g_write_batch && (number == 1 || number == 5);
    if (f == NULL) {
        if (!emit)
            return YB_OK;
        uint32_t key = field_key(NULL, number);
        if (key == JV_NO_KEY)
            return YB_NOMEM;
        (*members)++;
        if (n == 1)
            return scalar_node(NULL, REC(lo).wire, REC(lo).value, b, REC(lo).begin, REC(lo).stop, key);
        int64_t arr = push_node(JN_ARR, key);
        if (arr < 0)
            return YB_NOMEM;
        for (size_t k = lo; k < hi; k++) {
            int rc = scalar_node(NULL, REC(k).wire, REC(k).value, b, REC(k).begin, REC(k).stop, JV_NO_KEY);
            if (rc)
                return rc;
        }
        close_node(arr, (uint32_t)n);
        return YB_OK;
    }
    int inner = emit && !pulled && !counted;
    uint32_t key = JV_NO_KEY;
    if (inner && (key = field_key(f, number)) == JV_NO_KEY)
        return YB_NOMEM;
    int64_t arr = -1;
    if (inner && f->repeated && (arr = push_node(JN_ARR, key)) < 0)
        return YB_NOMEM;
    uint32_t count = 0;
    int w = wire_of(f->kind);
    for (size_t k = lo; k < hi; k++) {
        int rc, wire = REC(k).wire;
        size_t begin = REC(k).begin, stop = REC(k).stop;
        uint64_t value = REC(k).value;
        if (f->kind == YK_MESSAGE) {
            if (wire != W_LEN || depth + 1 > YB_MAX_DEPTH)
                return YB_DECLINE;
            rc = message_node(f->sub, b, begin, stop, depth + 1, arr >= 0 ? JV_NO_KEY : key, inner);
            count++;
        } else if (wire == w) {
            rc = inner ? scalar_node(f, wire, value, b, begin, stop, arr >= 0 ? JV_NO_KEY : key)
                       : (f->kind == YK_DOUBLE || f->kind == YK_FLOAT);
            count++;
        } else if (wire == W_LEN && f->repeated) {
            rc = packed_nodes(f, b, begin, stop, &count, inner);
        } else {
            return YB_DECLINE;
        }
        if (rc)
            return rc;
    }
    if (arr >= 0)
        close_node(arr, count);
    if (inner)
        (*members)++;
    if (counted && emit) {
        char name[64];
        if (f->name_len > sizeof name - 5)
            return YB_DECLINE;
        memcpy(name, "num_", 4);
        memcpy(name + 4, f->name, f->name_len);
        uint32_t ckey = add_key(name, 4 + f->name_len);
        int64_t i = ckey == JV_NO_KEY ? -1 : push_node(JN_INT, ckey);
        if (i < 0)
            return YB_NOMEM;
        jv_at(&g_jv, (uint32_t)i)->num = (__int128)n;
        (*members)++;
    }
    return YB_OK;
}

/* Message `msg` in b[start..end): an object node (emit) or only checked. */
static int message_node(long msg, const uint8_t *b, size_t start, size_t end, int depth, uint32_t key, int emit)
{
    size_t base = g_recs.len / sizeof(yb_rec), count = 0;
    int rc = collect(b, start, end, &count);
    int64_t obj = -1;
    uint32_t members = 0;
    if (rc == YB_OK && emit && (obj = push_node(JN_OBJ, key)) < 0)
        rc = YB_NOMEM;
    int has_pairs = 0;
    for (size_t lo = base; rc == YB_OK && lo < base + count;) {
        size_t hi = lo + 1;
        while (hi < base + count && REC(hi).number == REC(lo).number)
            hi++;
        has_pairs |= msg == g_write_batch && REC(lo).number == 1;
        rc = field_member(msg, lo, hi, b, depth, emit, &members);
        lo = hi;
    }
    if (rc == YB_OK && emit && msg == g_write_batch && !has_pairs) {
        /* messages.py _pairs: num_write_pairs is there even when the batch has no pair */
        const yb_field *f = yb_find_field(msg, 1);
        char name[64];
        if (f == NULL || f->name_len > sizeof name - 5) {
            rc = YB_DECLINE;
        } else {
            memcpy(name, "num_", 4);
            memcpy(name + 4, f->name, f->name_len);
            uint32_t ckey = add_key(name, 4 + f->name_len);
            rc = ckey == JV_NO_KEY || push_node(JN_INT, ckey) < 0 ? YB_NOMEM : YB_OK;
            members++;
        }
    }
    if (rc == YB_OK && obj >= 0)
        close_node(obj, members);
    g_recs.len = base * sizeof(yb_rec);
    return rc;
}

/* ---- pulling columns out of a checked message ---- */

/* The last field `number` of b[start..end) (the message was checked: it parses). */
int yb_last_field(const uint8_t *b, size_t start, size_t end, uint64_t number, yb_rec *out)
{
    size_t pos = start;
    int found = 0;
    while (pos < end) {
        uint64_t key, v = 0;
        if (varint(b, &pos, end, &key))
            return found;
        yb_rec r = {key >> 3, 0, 0, 0, 0, (uint8_t)(key & 7)};
        if (r.wire == W_VARINT) {
            if (varint(b, &pos, end, &v))
                return found;
            r.value = v;
        } else if (r.wire == W_FIXED64) {
            if (end - pos < 8)
                return found;
            memcpy(&r.value, b + pos, 8);
            pos += 8;
        } else if (r.wire == W_FIXED32) {
            if (end - pos < 4)
                return found;
            pos += 4;
        } else if (r.wire == W_LEN) {
            if (varint(b, &pos, end, &v) || v > end - pos)
                return found;
            r.begin = pos;
            r.stop = pos + (size_t)v;
            pos = r.stop;
        } else {
            return found;
        }
        if (r.number == number) {
            *out = r;
            found = 1;
        }
    }
    return found;
}

#define last_field yb_last_field

int yb_check_message(long msg, const uint8_t *b, size_t start, size_t end)
{
    return message_node(msg, b, start, end, 0, JV_NO_KEY, 0);
}

/* term and index of an OpIdPB (int64 fields 1 and 2). */
static void op_id(const uint8_t *b, const yb_rec *m, yb_row *row, uint32_t term_flag, uint32_t index_flag,
                  int64_t *term, int64_t *index)
{
    yb_rec r;
    if (last_field(b, m->begin, m->stop, 1, &r)) {
        *term = (int64_t)r.value;
        row->flags |= term_flag;
    }
    if (last_field(b, m->begin, m->stop, 2, &r)) {
        *index = (int64_t)r.value;
        row->flags |= index_flag;
    }
}

/* An enum column's text (the name, else the number read as int32). */
static int enum_text(yb_rows *r, int column, long msg, uint64_t number, uint64_t value)
{
    const yb_field *f = yb_find_field(msg, number);
    int32_t v = (int32_t)(uint32_t)value;
    const yb_enum_item *it = f ? yb_find_enum(f->enm, v) : NULL;
    if (it != NULL)
        return yb_row_value(r, column, (const uint8_t *)it->name, it->len);
    char text[24];
    int n = i64_text(text, v);
    return yb_row_value(r, column, (const uint8_t *)text, (size_t)n);
}

static int uuid_column(yb_rows *r, const uint8_t *b, const yb_rec *m)
{
    int rc = len_text(&r->data[YC_TXN], YK_UUID, b + m->begin, m->stop - m->begin);
    if (rc)
        return rc;
    uint64_t end = r->data[YC_TXN].len;
    return ls_buf_put(&r->ends[YC_TXN], &end, sizeof end) ? YB_NOMEM : YB_OK;
}

/* One ReplicateMsg b[m.begin..m.stop) → one row (details, columns). */

/* The fields every row of an entry carries: where it is, and the entry's op id, hybrid time and committed op id. */
static yb_row entry_head(const uint8_t *b, const yb_rec *m, int64_t offset, int32_t ctx, int32_t entry)
{
    yb_rec f;
    yb_row row = {0};
    row.offset = offset;
    row.ctx = ctx;
    row.entry_in_batch = entry;
    if (last_field(b, m->begin, m->stop, 1, &f))
        op_id(b, &f, &row, YR_TERM, YR_INDEX, &row.term, &row.index);
    if (last_field(b, m->begin, m->stop, 2, &f) && f.value <= (uint64_t)INT64_MAX) {
        row.ht = (int64_t)f.value;
        row.flags |= YR_HT;
    }
    if (last_field(b, m->begin, m->stop, 8, &f))
        op_id(b, &f, &row, YR_CTERM, YR_CINDEX, &row.cterm, &row.cindex);
    return row;
}
static int replicate_row(const uint8_t *b, const yb_rec *m, int64_t offset, int32_t ctx, int32_t entry, yb_rows *r)
{
    yb_rec f, g, h, k;
    g_jv.nodes.len = g_jv.keys.len = g_jv.text.len = g_jv.stack.len = 0;
    int rc = message_node(g_replicate, b, m->begin, m->stop, 0, JV_NO_KEY, 1);
    if (rc)
        return rc;
    g_value.len = g_meta.len = 0;
    if ((rc = jv_metadata(&g_jv, &g_meta)) || (rc = jv_encode(&g_jv, 0, &g_value)))
        return rc == JV_NOMEM ? YB_NOMEM : YB_DECLINE;
    yb_row row = entry_head(b, m, offset, ctx, entry);
    if (last_field(b, m->begin, m->stop, 4, &f)) {
        row.flags |= YR_OPTYPE;
        if ((rc = enum_text(r, YC_OPTYPE, g_replicate, 4, f.value)))
            return rc;
    } else if ((rc = yb_row_null(r, YC_OPTYPE))) {
        return rc;
    }
    /* transaction id: the write batch's transaction metadata, then (replacing it) the transaction state's */
    int txn = 0, status = 0;
    yb_rec id;
    if (last_field(b, m->begin, m->stop, 5, &f) && last_field(b, f.begin, f.stop, 7, &g)
        && last_field(b, g.begin, g.stop, 2, &h)) {
        txn = last_field(b, h.begin, h.stop, 1, &id);
    }
    if (last_field(b, m->begin, m->stop, 10, &f)) {
        txn = last_field(b, f.begin, f.stop, 1, &id);
        status = last_field(b, f.begin, f.stop, 2, &k);
    }
    if (txn) {
        row.flags |= YR_TXN;
        rc = uuid_column(r, b, &id);
    } else {
        rc = yb_row_null(r, YC_TXN);
    }
    if (rc)
        return rc;
    if (status) {
        const yb_field *ts = yb_find_field(g_replicate, 10);
        row.flags |= YR_STATUS;
        rc = ts ? enum_text(r, YC_STATUS, ts->sub, 2, k.value) : YB_DECLINE;
    } else {
        rc = yb_row_null(r, YC_STATUS);
    }
    if (rc || (rc = yb_row_value(r, YC_VALUE, g_value.data, g_value.len))
        || (rc = yb_row_value(r, YC_META, g_meta.data, g_meta.len)) || (rc = yb_row_null(r, YC_MESSAGE)))
        return rc;
    const uint64_t *ends[YC_MESSAGE];
    uint64_t size = 0;
    size_t nrow = r->rows.len / sizeof(yb_row);
    for (int c = 0; c < YC_MESSAGE; c++) {
        ends[c] = (const uint64_t *)r->ends[c].data;
        size += ends[c][nrow] - (nrow ? ends[c][nrow - 1] : 0);
    }
    row.size = size;
    return ls_buf_put(&r->rows, &row, sizeof row) ? YB_NOMEM : YB_OK;
}

/* The writes view's rows of one ReplicateMsg (messages.py _entry, reader.py _add): its pairs' rows, or one hidden
 * row when it keeps none; a schema change is declined (the reader's catalog must learn it first). */
static int write_entry(const uint8_t *b, const yb_rec *m, int64_t offset, int32_t ctx, int32_t entry, yb_rows *r,
                       const yb_catalog *cat)
{
    yb_rec f, g, h, id;
    int rc = yb_check_message(g_replicate, b, m->begin, m->stop);
    if (rc)
        return rc;
    if (last_field(b, m->begin, m->stop, 6, &f))
        return YB_DECLINE;
    yb_row row = entry_head(b, m, offset, ctx, entry);
    int txn = 0, has_batch = 0;
    yb_rec wb;
    if (last_field(b, m->begin, m->stop, 5, &f) && last_field(b, f.begin, f.stop, 7, &wb)) {
        has_batch = 1;
        if (last_field(b, wb.begin, wb.stop, 2, &h))
            txn = last_field(b, h.begin, h.stop, 1, &id);
    }
    if (last_field(b, m->begin, m->stop, 10, &g))
        txn = last_field(b, g.begin, g.stop, 1, &id);
    g_value.len = 0;
    if (txn) {
        row.flags |= YR_TXN;
        if ((rc = len_text(&g_value, YK_UUID, b + id.begin, id.stop - id.begin)))
            return rc;
    }
    size_t before = r->rows.len;
    if (has_batch && (rc = yb_write_rows(b, &wb, &row, g_value.data, g_value.len, r, cat)))
        return rc;
    if (r->rows.len > before) {
        yb_row_at(r, yb_nrows(r) - 1)->flags |= YR_LAST;
        return YB_OK;
    }
    row.flags |= YR_HIDDEN | YR_LAST;
    for (int c = 0; c < r->ncols; c++)
        if (yb_row_null(r, c))
            return YB_NOMEM;
    return ls_buf_put(&r->rows, &row, sizeof row) ? YB_NOMEM : YB_OK;
}

/* messages.py decode_batch: LogEntryBatchPB (1 entry LogEntryPB, 2 committed_op_id, 3 mono_time). */
int yb_decode_batch(const uint8_t *buf, size_t n, int64_t offset, int32_t ctx, yb_rows *r, yb_batch_info *info,
                    const yb_catalog *writes)
{
    g_recs.len = 0;
    size_t count = 0;
    int rc = collect(buf, 0, n, &count);
    if (rc)
        return rc;
    info->has_committed = 0;
    info->committed = 0;
    int32_t entry = 0;
    for (size_t i = 0; i < count; i++) {
        yb_rec e = REC(i);
        int dup = i + 1 < count && REC(i + 1).number == e.number;
        if (e.number == 2 || e.number == 3) {
            if (dup || (e.number == 2 && e.wire != W_LEN) || (e.number == 3 && e.wire != W_VARINT))
                return YB_DECLINE;
            if (e.number == 2) {
                /* the OpIdPB must parse as the reference parses it; its index (0 when absent) releases rows */
                size_t mark = g_recs.len, c2 = 0;
                if ((rc = collect(buf, e.begin, e.stop, &c2)))
                    return rc;
                for (size_t j = 0; j < c2; j++) {
                    yb_rec *o = &((yb_rec *)(g_recs.data + mark))[j];
                    if ((o->number == 1 || o->number == 2) && o->wire != W_VARINT)
                        return YB_DECLINE;
                    if (j + 1 < c2 && o[1].number == o->number && (o->number == 1 || o->number == 2))
                        return YB_DECLINE;
                    if (o->number == 2)
                        info->committed = (int64_t)o->value;
                }
                g_recs.len = mark;
                info->has_committed = 1;
            }
            continue;
        }
        if (e.number != 1)
            continue; /* unknown fields of the batch are not kept */
        if (e.wire != W_LEN)
            return YB_DECLINE;
        /* LogEntryPB: 1 type (REPLICATE = 1, read as int32), 2 replicate */
        yb_rec t = {0}, m = {0};
        size_t mark = g_recs.len, c2 = 0;
        if ((rc = collect(buf, e.begin, e.stop, &c2)))
            return rc;
        int types = 0, msgs = 0;
        for (size_t j = 0; j < c2; j++) {
            yb_rec o = ((yb_rec *)(g_recs.data + mark))[j];
            if (o.number == 1) {
                if (o.wire != W_VARINT)
                    return YB_DECLINE;
                t = o;
                types++;
            } else if (o.number == 2) {
                if (o.wire != W_LEN)
                    return YB_DECLINE;
                m = o;
                msgs++;
            }
        }
        g_recs.len = mark;
        if (types != 1 || msgs != 1 || (int32_t)(uint32_t)t.value != 1)
            return YB_DECLINE;
        rc = writes ? write_entry(buf, &m, offset, ctx, entry, r, writes) : replicate_row(buf, &m, offset, ctx, entry, r);
        if (rc)
            return rc;
        g_recs.len = mark;
        entry++;
    }
    return YB_OK;
}
