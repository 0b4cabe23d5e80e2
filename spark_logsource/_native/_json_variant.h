/*
 * JSON text -> Spark Variant (value, metadata), byte for byte what
 *     spark_logsource.arrow.variant.encode_variant(json.JSONDecoder(parse_float=decimal.Decimal).decode(text))
 * gives: the typed view's conversion of a MariaDB JSON value (mysql/table/layout.py conv_json + to_variant).
 *
 * The rules this code relies on are in docs/formats/mysql-typed.md ("JSON text as a Variant"): the JSON grammar of
 * Python's json module (whitespace " \t\n\r", numbers -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?, strict
 * strings), numbers without fraction or exponent as Python ints (smallest Variant int, decimal16 scale 0 above
 * int64), the others as Decimal (coefficient and exponent kept: decimal4/8/16 by precision, scale = -exponent),
 * objects with their fields sorted by key bytes, a metadata dictionary of the document's sorted distinct keys.
 *
 * Anything outside the part written here answers JV_DECLINE, and the caller leaves the value to the Python
 * reference, which gives the same bytes or its error: text that is not JSON, NaN / Infinity, numbers of more than
 * 38 digits or exponents past +-1000, lone surrogate escapes, duplicate keys in an object (Python keeps the last
 * one and the keys of the dropped value stay out of the dictionary), nesting deeper than JV_MAX_DEPTH, containers
 * or strings of 4 GiB and more, texts above JV_MAX_TEXT. The text must be valid UTF-8 (the caller checks bytes
 * of unknown origin).
 *
 * Two steps over a scratch tree (jv_ctx, reused from value to value): parse into nodes in preorder, each knowing
 * its subtree's size; then number the distinct keys in sorted order and encode, writing each container's
 * children first and its header in front of them.
 */
#ifndef SPARK_LOGSOURCE_JSON_VARIANT_H
#define SPARK_LOGSOURCE_JSON_VARIANT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buf.h"
#include "_encode.h"

enum { JV_OK = 0, JV_NOMEM = -1, JV_DECLINE = 1 };

#define JV_MAX_DEPTH 64
#define JV_MAX_TEXT ((size_t)1 << 20) /* larger texts go to Python: the tree takes up to ~30 times the text */
#define JV_MAX_EXPONENT 1000
#define JV_NO_KEY UINT32_MAX

enum { JN_NULL, JN_TRUE, JN_FALSE, JN_INT, JN_DEC, JN_STR, JN_ARR, JN_OBJ };

/* One JSON value. Members of an object carry their key (an index into jv_ctx.keys). */
typedef struct {
    __int128 num;   /* JN_INT: the integer; JN_DEC: the unscaled value */
    size_t off, len; /* JN_STR: the unescaped UTF-8 in jv_ctx.text */
    uint32_t size;  /* nodes in this subtree, itself included */
    uint32_t count; /* JN_ARR / JN_OBJ: children */
    uint32_t key;   /* JV_NO_KEY, or the member's key */
    uint8_t kind;
    uint8_t scale, precision; /* JN_DEC */
} jv_node;

/* A key: its unescaped UTF-8 in jv_ctx.text and, once numbered, its id in the metadata dictionary. */
typedef struct {
    size_t off, len;
    uint32_t id;
} jv_key;

/* Scratch state, reused from value to value (zero-initialised; jv_free releases it). */
typedef struct {
    ls_buf nodes, keys, text, sorted, distinct, stack;
    /* the keys of the last document whose dictionary was built (u32 length + bytes each, in document order), their
     * ids and its metadata: documents of one column mostly repeat their keys */
    ls_buf prev_keys, prev_ids, prev_meta;
    size_t prev_count; /* keys in prev_keys; the cache is empty while prev_meta is */
} jv_ctx;

static inline void jv_free(jv_ctx *c)
{
    ls_buf_free(&c->nodes);
    ls_buf_free(&c->keys);
    ls_buf_free(&c->text);
    ls_buf_free(&c->sorted);
    ls_buf_free(&c->distinct);
    ls_buf_free(&c->stack);
    ls_buf_free(&c->prev_keys);
    ls_buf_free(&c->prev_ids);
    ls_buf_free(&c->prev_meta);
}

static inline jv_node *jv_at(jv_ctx *c, uint32_t i) { return (jv_node *)c->nodes.data + i; }

/* ---- parsing ---- */

typedef struct {
    const uint8_t *s;
    size_t n, p;
} jv_in;

static inline void jv_space(jv_in *in)
{
    while (in->p < in->n) {
        uint8_t ch = in->s[in->p];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            return;
        in->p++;
    }
}

static inline int jv_hex4(jv_in *in, uint32_t *out)
{
    if (in->n - in->p < 4)
        return JV_DECLINE;
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t ch = in->s[in->p++];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return JV_DECLINE;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return JV_OK;
}

static inline int jv_utf8(ls_buf *b, uint32_t cp)
{
    uint8_t u[4];
    size_t k;
    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xc0 | cp >> 6);
        u[1] = (uint8_t)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xe0 | cp >> 12);
        u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (uint8_t)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        u[0] = (uint8_t)(0xf0 | cp >> 18);
        u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (uint8_t)(0x80 | (cp & 0x3f));
        k = 4;
    }
    return ls_buf_put(b, u, k) ? JV_NOMEM : JV_OK;
}

/* A string literal (in->p just after the opening quote), unescaped onto c->text. */
static int jv_string(jv_ctx *c, jv_in *in, size_t *off, size_t *len)
{
    *off = c->text.len;
    for (;;) {
        size_t start = in->p;
        while (in->p < in->n && in->s[in->p] != '"' && in->s[in->p] != '\\' && in->s[in->p] >= 0x20)
            in->p++;
        if (ls_buf_put(&c->text, in->s + start, in->p - start))
            return JV_NOMEM;
        if (in->p >= in->n || in->s[in->p] < 0x20) /* unterminated, or a raw control character */
            return JV_DECLINE;
        if (in->s[in->p++] == '"')
            break;
        if (in->p >= in->n)
            return JV_DECLINE;
        uint8_t e = in->s[in->p++];
        static const char plain[] = "\"\\/bfnrt";
        static const char value[] = "\"\\/\b\f\n\r\t";
        const char *hit = e ? strchr(plain, e) : NULL;
        if (hit != NULL) {
            if (ls_buf_byte(&c->text, (uint8_t)value[hit - plain]))
                return JV_NOMEM;
            continue;
        }
        uint32_t cp;
        if (e != 'u' || jv_hex4(in, &cp))
            return JV_DECLINE;
        if (cp >= 0xd800 && cp <= 0xdfff) { /* only a high surrogate escaped right before a low one */
            uint32_t low;
            if (cp > 0xdbff || in->n - in->p < 6 || in->s[in->p] != '\\' || in->s[in->p + 1] != 'u')
                return JV_DECLINE;
            in->p += 2;
            if (jv_hex4(in, &low) || low < 0xdc00 || low > 0xdfff)
                return JV_DECLINE;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        int rc = jv_utf8(&c->text, cp);
        if (rc)
            return rc;
    }
    *len = c->text.len - *off;
    return *len > 0xffffffffULL ? JV_DECLINE : JV_OK;
}

/* Digits from in->p into *v (at most 38 significant ones; leading zeros not counted); their count in *ndigits. */
static inline int jv_digits(jv_in *in, __int128 *v, int *sig, size_t *ndigits)
{
    size_t start = in->p;
    while (in->p < in->n && in->s[in->p] >= '0' && in->s[in->p] <= '9') {
        int d = in->s[in->p++] - '0';
        if (*sig == 0 && d == 0)
            continue;
        if (++*sig > 38)
            return JV_DECLINE;
        *v = *v * 10 + d;
    }
    *ndigits = in->p - start;
    return JV_OK;
}

/* A number: a Python int (JN_INT) or, with a fraction or an exponent, a Decimal (JN_DEC). */
static int jv_number(jv_in *in, jv_node *node)
{
    int negative = in->s[in->p] == '-';
    if (negative)
        in->p++;
    if (in->p >= in->n || in->s[in->p] < '0' || in->s[in->p] > '9')
        return JV_DECLINE;
    __int128 coef = 0;
    int sig = 0;
    size_t nint, nfrac = 0;
    if (in->s[in->p] == '0') { /* a leading 0 is the whole integer part */
        in->p++;
        nint = 1;
    } else if (jv_digits(in, &coef, &sig, &nint)) {
        return JV_DECLINE;
    }
    int is_decimal = 0;
    long exponent = 0;
    if (in->p + 1 < in->n && in->s[in->p] == '.' && in->s[in->p + 1] >= '0' && in->s[in->p + 1] <= '9') {
        in->p++;
        is_decimal = 1;
        if (jv_digits(in, &coef, &sig, &nfrac) || nfrac > JV_MAX_EXPONENT)
            return JV_DECLINE;
    }
    if (in->p < in->n && (in->s[in->p] == 'e' || in->s[in->p] == 'E')) {
        size_t q = in->p + 1;
        int eneg = 0;
        if (q < in->n && (in->s[q] == '+' || in->s[q] == '-'))
            eneg = in->s[q++] == '-';
        if (q < in->n && in->s[q] >= '0' && in->s[q] <= '9') { /* else the 'e' is not part of the number */
            in->p = q;
            is_decimal = 1;
            while (in->p < in->n && in->s[in->p] >= '0' && in->s[in->p] <= '9') {
                exponent = exponent * 10 + (in->s[in->p++] - '0');
                if (exponent > JV_MAX_EXPONENT)
                    return JV_DECLINE;
            }
            if (eneg)
                exponent = -exponent;
        }
    }
    if (negative)
        coef = -coef;
    if (!is_decimal) {
        node->kind = JN_INT; /* int(text): decimal16 scale 0 above int64, up to 38 digits */
        node->num = coef;
        return JV_OK;
    }
    /* Decimal(text): coefficient = the digits without leading zeros ((0,) for zero), exponent shifted by the
     * fraction digits; arrow/variant.py _decimal: precision and scale from those, beyond 38 digits a string */
    long exp = exponent - (long)nfrac;
    int ndig = sig ? sig : 1;
    long precision, scale;
    if (exp >= 0) {
        scale = 0;
        precision = sig ? ndig + exp : 1;
    } else {
        scale = -exp;
        precision = ndig > scale ? ndig : scale;
    }
    if (precision > 38)
        return JV_DECLINE;
    for (long k = 0; k < exp; k++) /* precision <= 38: no overflow */
        coef *= 10;
    node->kind = JN_DEC;
    node->num = coef;
    node->scale = (uint8_t)scale;
    node->precision = (uint8_t)precision;
    return JV_OK;
}

static inline int jv_literal(jv_in *in, const char *word, size_t n)
{
    if (in->n - in->p < n || memcmp(in->s + in->p, word, n) != 0)
        return JV_DECLINE;
    in->p += n;
    return JV_OK;
}

/* One value at in->p (whitespace skipped before it) as node i and its subtree. */
static int jv_value(jv_ctx *c, jv_in *in, int depth, uint32_t key)
{
    if (depth > JV_MAX_DEPTH || c->nodes.len / sizeof(jv_node) >= UINT32_MAX - 1)
        return JV_DECLINE;
    uint32_t i = (uint32_t)(c->nodes.len / sizeof(jv_node));
    jv_node fresh = {.key = key, .size = 1};
    if (ls_buf_put(&c->nodes, &fresh, sizeof fresh))
        return JV_NOMEM;
    jv_space(in);
    if (in->p >= in->n)
        return JV_DECLINE;
    uint8_t ch = in->s[in->p];
    int rc = JV_OK;
    switch (ch) {
    case '{':
    case '[': {
        int is_object = ch == '{';
        uint32_t count = 0;
        in->p++;
        jv_space(in);
        uint8_t close = is_object ? '}' : ']';
        if (in->p < in->n && in->s[in->p] == close) {
            in->p++;
        } else {
            for (;;) {
                uint32_t member_key = JV_NO_KEY;
                if (is_object) {
                    jv_space(in);
                    if (in->p >= in->n || in->s[in->p] != '"')
                        return JV_DECLINE;
                    in->p++;
                    jv_key k = {0};
                    if ((rc = jv_string(c, in, &k.off, &k.len)))
                        return rc;
                    if (c->keys.len / sizeof(jv_key) >= UINT32_MAX - 1)
                        return JV_DECLINE;
                    member_key = (uint32_t)(c->keys.len / sizeof(jv_key));
                    if (ls_buf_put(&c->keys, &k, sizeof k))
                        return JV_NOMEM;
                    jv_space(in);
                    if (in->p >= in->n || in->s[in->p++] != ':')
                        return JV_DECLINE;
                }
                if ((rc = jv_value(c, in, depth + 1, member_key)))
                    return rc;
                count++;
                jv_space(in);
                if (in->p >= in->n)
                    return JV_DECLINE;
                uint8_t next = in->s[in->p++];
                if (next == close)
                    break;
                if (next != ',')
                    return JV_DECLINE;
            }
        }
        jv_node *node = jv_at(c, i);
        node->kind = is_object ? JN_OBJ : JN_ARR;
        node->count = count;
        break;
    }
    case '"': {
        in->p++;
        size_t off, len;
        if ((rc = jv_string(c, in, &off, &len)))
            return rc;
        jv_node *node = jv_at(c, i);
        node->kind = JN_STR;
        node->off = off;
        node->len = len;
        break;
    }
    case 't':
    case 'f':
    case 'n':
        rc = ch == 't' ? jv_literal(in, "true", 4) : ch == 'f' ? jv_literal(in, "false", 5) : jv_literal(in, "null", 4);
        if (rc)
            return rc;
        jv_at(c, i)->kind = ch == 't' ? JN_TRUE : ch == 'f' ? JN_FALSE : JN_NULL;
        break;
    default: {
        if (ch != '-' && (ch < '0' || ch > '9')) /* NaN, Infinity and anything else */
            return JV_DECLINE;
        jv_node number = {.key = key, .size = 1};
        if ((rc = jv_number(in, &number)))
            return rc;
        *jv_at(c, i) = number;
        break;
    }
    }
    jv_at(c, i)->size = (uint32_t)(c->nodes.len / sizeof(jv_node)) - i;
    return JV_OK;
}

/* ---- the metadata dictionary ---- */

typedef struct {
    const uint8_t *s;
    size_t n;
    uint32_t key;
} jv_sort_key;

static int jv_cmp_key(const void *a, const void *b)
{
    const jv_sort_key *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int r = n ? memcmp(x->s, y->s, n) : 0;
    if (r)
        return r;
    return (x->n > y->n) - (x->n < y->n);
}

/* Whether the document's keys are, in order, those of the last dictionary built; if so, its ids are set. */
static int jv_same_keys(jv_ctx *c, size_t nkeys)
{
    if (c->prev_meta.len == 0 || nkeys != c->prev_count)
        return 0;
    jv_key *keys = (jv_key *)c->keys.data;
    const uint8_t *p = c->prev_keys.data;
    for (size_t k = 0; k < nkeys; k++) {
        uint32_t len;
        memcpy(&len, p, sizeof len);
        if (len != keys[k].len || (len && memcmp(p + sizeof len, c->text.data + keys[k].off, len) != 0))
            return 0;
        p += sizeof len + len;
    }
    const uint32_t *ids = (const uint32_t *)c->prev_ids.data;
    for (size_t k = 0; k < nkeys; k++)
        keys[k].id = ids[k];
    return 1;
}

/* Keep the document's keys, their ids and the metadata meta[from..] for the next document. */
static int jv_remember_keys(jv_ctx *c, size_t nkeys, const ls_buf *meta, size_t from)
{
    const jv_key *keys = (const jv_key *)c->keys.data;
    c->prev_keys.len = c->prev_ids.len = c->prev_meta.len = 0;
    for (size_t k = 0; k < nkeys; k++) {
        uint32_t len = (uint32_t)keys[k].len; /* jv_string declines keys of 4 GiB and more */
        if (ls_buf_put(&c->prev_keys, &len, sizeof len) || ls_buf_put(&c->prev_keys, c->text.data + keys[k].off, len)
            || ls_buf_put(&c->prev_ids, &keys[k].id, sizeof keys[k].id))
            return JV_NOMEM;
    }
    c->prev_count = nkeys;
    return ls_buf_put(&c->prev_meta, meta->data + from, meta->len - from) ? JV_NOMEM : JV_OK;
}

/* Number the distinct keys in byte order (jv_key.id) and write the metadata (from the last document's when the
 * keys are the same). */
static int jv_metadata(jv_ctx *c, ls_buf *meta)
{
    size_t nkeys = c->keys.len / sizeof(jv_key);
    if (jv_same_keys(c, nkeys))
        return ls_buf_put(meta, c->prev_meta.data, c->prev_meta.len) ? JV_NOMEM : JV_OK;
    size_t from = meta->len;
    c->sorted.len = c->distinct.len = 0;
    if (ls_buf_reserve(&c->sorted, nkeys * sizeof(jv_sort_key))
        || ls_buf_reserve(&c->distinct, nkeys * sizeof(ls_key)))
        return JV_NOMEM;
    jv_key *keys = (jv_key *)c->keys.data;
    jv_sort_key *sorted = (jv_sort_key *)c->sorted.data;
    ls_key *distinct = (ls_key *)c->distinct.data;
    for (size_t k = 0; k < nkeys; k++)
        sorted[k] = (jv_sort_key){c->text.data + keys[k].off, keys[k].len, (uint32_t)k};
    if (nkeys > 1)
        qsort(sorted, nkeys, sizeof *sorted, jv_cmp_key);
    /* each occurrence gets its key's id, the distinct keys are listed in order */
    size_t count = 0;
    uint64_t total = 0;
    for (size_t k = 0; k < nkeys; k++) {
        if (k == 0 || jv_cmp_key(&sorted[k - 1], &sorted[k]) != 0) {
            distinct[count++] = (ls_key){sorted[k].s, sorted[k].n};
            total += sorted[k].n;
        }
        keys[sorted[k].key].id = (uint32_t)(count - 1);
    }
    int rc = ls_variant_metadata(meta, distinct, count, total);
    if (rc)
        return rc < 0 ? JV_NOMEM : JV_DECLINE;
    return jv_remember_keys(c, nkeys, meta, from);
}

/* ---- encoding ---- */

/* A member of an object being encoded: its node and field id. */
typedef struct {
    uint32_t node, id;
} jv_member;

static int jv_cmp_member(const void *a, const void *b)
{
    const jv_member *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int jv_encode(jv_ctx *c, uint32_t i, ls_buf *out);

/* Container node i: children into out (object members by field id), then its head in front of them. Ids and
 * offsets take the fewest bytes that hold them (arrow/variant.py's small form is the case where that is one byte). */
static int jv_container(jv_ctx *c, uint32_t i, ls_buf *out)
{
    jv_node node = *jv_at(c, i);
    int is_object = node.kind == JN_OBJ;
    size_t count = node.count;
    /* this container's members and their start offsets live on c->stack above those of its ancestors */
    size_t base = c->stack.len;
    size_t need = count * (sizeof(jv_member) + sizeof(uint64_t));
    if (ls_buf_reserve(&c->stack, need))
        return JV_NOMEM;
    c->stack.len += need;
    jv_member *members = (jv_member *)(c->stack.data + base);
    const jv_key *keys = (const jv_key *)c->keys.data;
    uint32_t child = i + 1;
    for (size_t k = 0; k < count; k++) {
        const jv_node *ch = jv_at(c, child);
        members[k] = (jv_member){child, is_object ? keys[ch->key].id : 0};
        child += ch->size;
    }
    if (is_object) {
        qsort(members, count, sizeof *members, jv_cmp_member);
        for (size_t k = 1; k < count; k++)
            if (members[k].id == members[k - 1].id) /* a duplicate key: Python keeps the last */
                return JV_DECLINE;
    }
    size_t data_start = out->len;
    int rc;
    for (size_t k = 0; k < count; k++) {
        uint64_t start = out->len - data_start;
        memcpy(c->stack.data + base + count * sizeof(jv_member) + k * sizeof(uint64_t), &start, sizeof start);
        uint32_t member = ((jv_member *)(c->stack.data + base))[k].node;
        if ((rc = jv_encode(c, member, out)))
            return rc;
    }
    members = (jv_member *)(c->stack.data + base);
    const uint8_t *starts = c->stack.data + base + count * sizeof(jv_member);
    size_t size = out->len - data_start;
    uint32_t max_id = 0;
    for (size_t k = 0; k < count; k++)
        if (members[k].id > max_id)
            max_id = members[k].id;
    int offset_size = ls_size_of(size), id_size = is_object ? ls_size_of(max_id) : 0;
    if (offset_size == 0 || count > 0xffffffffULL)
        return JV_DECLINE;
    uint8_t *p = ls_variant_head(out, data_start, count, id_size, offset_size);
    if (p == NULL)
        return JV_NOMEM;
    for (size_t k = 0; is_object && k < count; k++, p += id_size)
        ls_put_le(p, members[k].id, id_size);
    for (size_t k = 0; k < count; k++, p += offset_size) {
        uint64_t start;
        memcpy(&start, starts + k * sizeof start, sizeof start);
        ls_put_le(p, start, offset_size);
    }
    ls_put_le(p, size, offset_size);
    c->stack.len = base;
    return JV_OK;
}

static int jv_encode(jv_ctx *c, uint32_t i, ls_buf *out)
{
    const jv_node *node = jv_at(c, i);
    switch (node->kind) {
    case JN_NULL:
        return ls_buf_byte(out, VH_NULL) ? JV_NOMEM : JV_OK;
    case JN_TRUE:
        return ls_buf_byte(out, VH_TRUE) ? JV_NOMEM : JV_OK;
    case JN_FALSE:
        return ls_buf_byte(out, VH_FALSE) ? JV_NOMEM : JV_OK;
    case JN_STR: {
        size_t off = node->off, len = node->len;
        int rc = ls_variant_str(out, c->text.data + off, len);
        return rc < 0 ? JV_NOMEM : rc ? JV_DECLINE : JV_OK;
    }
    case JN_INT:
        if (node->num >= INT64_MIN && node->num <= INT64_MAX)
            return ls_variant_int(out, (int64_t)node->num) ? JV_NOMEM : JV_OK;
        /* arrow/variant.py _int: above int64, decimal16 with scale 0 (38 digits at most: the parser's limit) */
        if (ls_buf_byte(out, VH_DECIMAL16) || ls_buf_byte(out, 0) || ls_buf_le(out, (uint64_t)node->num, 8) ||
            ls_buf_le(out, (uint64_t)((unsigned __int128)node->num >> 64), 8))
            return JV_NOMEM;
        return JV_OK;
    case JN_DEC: {
        int width = node->precision <= 9 ? 4 : node->precision <= 18 ? 8 : 16;
        uint8_t head = width == 4 ? VH_DECIMAL4 : width == 8 ? VH_DECIMAL8 : VH_DECIMAL16;
        unsigned __int128 u = (unsigned __int128)node->num;
        if (ls_buf_byte(out, head) || ls_buf_byte(out, node->scale) || ls_buf_le(out, (uint64_t)u, width < 8 ? 4 : 8))
            return JV_NOMEM;
        if (width == 16 && ls_buf_le(out, (uint64_t)(u >> 64), 8))
            return JV_NOMEM;
        return JV_OK;
    }
    default:
        return jv_container(c, i, out);
    }
}

/* The Variant of the JSON text s[0..n) (valid UTF-8): value bytes appended to value, metadata to meta; JV_OK,
 * JV_NOMEM, or JV_DECLINE (nothing written that the caller must keep: it cuts both buffers back). */
static int jv_convert(jv_ctx *c, const uint8_t *s, size_t n, ls_buf *value, ls_buf *meta)
{
    if (n > JV_MAX_TEXT)
        return JV_DECLINE;
    c->nodes.len = c->keys.len = c->text.len = c->stack.len = 0;
    jv_in in = {s, n, 0};
    int rc = jv_value(c, &in, 0, JV_NO_KEY);
    if (rc)
        return rc;
    jv_space(&in);
    if (in.p != in.n) /* json: "Extra data" */
        return JV_DECLINE;
    if ((rc = jv_metadata(c, meta)))
        return rc;
    return jv_encode(c, 0, value);
}

#endif
