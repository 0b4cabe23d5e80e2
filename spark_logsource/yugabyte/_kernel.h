/*
 * The YugabyteDB WAL kernel's shared declarations: the C twin of messages.py + proto.py (entry batches decoded into
 * the operations view's rows, ``details`` written straight to a Spark Variant) and of reader.py's superseded queue.
 *
 * Byte layouts: docs/formats/yugabyte-wal.md ("Segment layout", "Protobuf wire format", "Messages and field
 * numbers", "Rows"). The message specs are not written here: messages.py hands its own (field numbers, names,
 * kinds, enums) to yb_set_specs once, so the two twins read the same definitions.
 *
 * The kernel takes only what it can decode exactly as the Python reference does. Anything else (a framing problem,
 * a field the reference would refuse, a field repeated where the reference keeps the last one,
 * nesting deeper than YB_MAX_DEPTH, a float) makes it stop before that entry batch, having kept nothing of it; the
 * reader then hands that one batch to the reference, which gives the same rows or the same error.
 */
#ifndef SPARK_LOGSOURCE_YUGABYTE_KERNEL_H
#define SPARK_LOGSOURCE_YUGABYTE_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../_native/_buf.h"

enum { YB_OK = 0, YB_NOMEM = -1, YB_DECLINE = 1 };

#define YB_ENTRY_HEADER 12
#define YB_MAX_BATCH ((uint64_t)256 << 20) /* segment.py MAX_BATCH_BYTES */
#define YB_MAX_DEPTH 24                    /* below proto.py's 32: deeper messages go to the reference */

/* Field kinds, in the order of messages.py's KIND_CODES. */
enum {
    YK_INT64, YK_UINT64, YK_INT32, YK_UINT32, YK_BOOL, YK_ENUM, YK_FIXED64, YK_DOUBLE, YK_FIXED32, YK_FLOAT,
    YK_BYTES, YK_STRING, YK_ID, YK_UUID, YK_RAW, YK_MESSAGE
};

/* Row flags. */
enum {
    YR_TERM = 1 << 0, YR_INDEX = 1 << 1, YR_HT = 1 << 2, YR_CTERM = 1 << 3, YR_CINDEX = 1 << 4, YR_OPTYPE = 1 << 5,
    YR_TXN = 1 << 6, YR_STATUS = 1 << 7, YR_SUPERSEDED = 1 << 8, YR_CORRUPT = 1 << 9, YR_DROP = 1 << 10,
    /* the writes view: a pair's row, its nullable columns; HIDDEN an entry without pair rows (kept in the queue,
     * never handed out), LAST the last row of an entry (the queue counts entries, as reader.py's does) */
    YR_PAIR = 1 << 11, YR_COLID = 1 << 12, YR_TOMB = 1 << 13, YR_TOMBV = 1 << 14, YR_SV = 1 << 15,
    YR_HIDDEN = 1 << 16, YR_LAST = 1 << 17, YR_COLNAME = 1 << 18, YR_KIND = 1 << 19, YR_ERROR = 1 << 20,
    YR_KEY = 1 << 21, YR_VAL = 1 << 22
};

/* One row held by the builder (an entry, or a corrupt-record row). */
typedef struct {
    int64_t offset, term, index, ht, cterm, cindex;
    int64_t schema_version; /* the writes view */
    uint64_t size; /* variable-width bytes of the row, its context's (file, table, tablet) excluded */
    int32_t entry_in_batch, ctx;
    int32_t pair_index, column_id; /* the writes view */
    uint32_t flags, pad;
} yb_row;

/* Variable-width columns of the rows: value bytes and, per row, where its value ends. The operations view uses the
 * first YC_OPS of them; the writes view all (YC_VALUE / YC_META then hold the value column's Variant). */
enum { YC_OPTYPE, YC_TXN, YC_STATUS, YC_VALUE, YC_META, YC_MESSAGE, YC_OPS,
       YC_COLNAME = YC_OPS, YC_KIND, YC_ERROR, YC_KEYV, YC_KEYM, YC_RAWK, YC_RAWV, YC_COUNT };

typedef struct {
    ls_buf rows;              /* yb_row */
    ls_buf data[YC_COUNT];    /* bytes */
    ls_buf ends[YC_COUNT];    /* uint64 per row: end of its value in data[] */
    int ncols;                /* YC_OPS or YC_COUNT */
} yb_rows;

static inline size_t yb_nrows(const yb_rows *r) { return r->rows.len / sizeof(yb_row); }
static inline yb_row *yb_row_at(yb_rows *r, size_t k) { return (yb_row *)r->rows.data + k; }
static inline uint64_t yb_end_at(const yb_rows *r, int c, size_t k) { return ((const uint64_t *)r->ends[c].data)[k]; }
static inline uint64_t yb_start_at(const yb_rows *r, int c, size_t k) { return k ? yb_end_at(r, c, k - 1) : 0; }

/* The writes view's table schemas, as the reader's SchemaCatalog holds them (catalog.py), handed over by
 * fast.py whenever the catalog changes: a column's name by id, the key columns' names, a packed row's layout. */
typedef struct {
    int64_t id;
    char *name;
    size_t len;
    int binary; /* DataType BINARY: its text values are kept as bytes */
    int size;   /* packed columns: the fixed size, or -1 (variable length) */
} yb_col;

typedef struct {
    int has_version, in_versions; /* in_versions: reachable by its version (SchemaCatalog.version) */
    int64_t version;
    yb_col *cols;      /* sorted by id, ids distinct */
    size_t ncols;
    yb_col *keys;      /* hash columns, then range columns (names only) */
    size_t nhash, nrange;
    yb_col *packed;
    size_t npacked, nvarlen;
} yb_schema;

typedef struct {
    yb_schema *items;
    size_t n;
    long current; /* -1: no schema yet */
    int has_low, has_high;
    int64_t low, high; /* the read's index range: entries outside it keep no pair rows */
} yb_catalog;

/* What decoding one entry batch adds: the entries' rows are appended to rows (unsettled), and the batch's
 * committed index (for releasing pending rows). */
typedef struct {
    int has_committed;
    int64_t committed;
} yb_batch_info;

/* One field of a message spec (messages.py FieldSpec), an enum's name. */
typedef struct {
    uint64_t number;
    char *name;
    size_t name_len;
    uint8_t kind, repeated;
    int32_t sub, enm;
} yb_field;

typedef struct {
    yb_field *fields; /* sorted by number */
    size_t n;
} yb_msg;

typedef struct {
    int64_t number;
    char *name;
    size_t len;
} yb_enum_item;

typedef struct {
    yb_enum_item *items;
    size_t n;
} yb_enum;

/* _kernel_specs.c */
extern long g_replicate, g_write_batch; /* spec numbers of ReplicateMsg and KeyValueWriteBatchPB */
int yb_set_specs(PyObject *specs, PyObject *enums, long replicate, long write_batch);
int yb_specs_ready(void);
void yb_specs_free(void);
const yb_field *yb_find_field(long msg, uint64_t number);
const yb_enum_item *yb_find_enum(int32_t enm, int64_t number);
uint32_t yb_crc32c(const uint8_t *p, size_t n);
void yb_crc32c_init(void);

/* _kernel_proto.c */
/* Decode the entry batch body buf[0..n) into rows appended to r (each with `offset`, `ctx`); YB_DECLINE leaves
 * r as it was only together with yb_rows_truncate (the caller marks the lengths before). */
int yb_decode_batch(const uint8_t *buf, size_t n, int64_t offset, int32_t ctx, yb_rows *r, yb_batch_info *info,
                    const yb_catalog *writes);
void yb_proto_free(void);
/* The fields of b[start..end) are valid as the reference reads message `msg` (nothing emitted); the last field
 * `number` of a checked message. */
int yb_check_message(long msg, const uint8_t *b, size_t start, size_t end);
typedef struct {
    uint64_t number, value;
    size_t begin, stop;
    uint32_t seq;
    uint8_t wire;
} yb_rec;
int yb_last_field(const uint8_t *b, size_t start, size_t end, uint64_t number, yb_rec *out);

/* _kernel_tables.c */
const yb_col *yb_column_by_id(const yb_schema *s, int64_t id);
const yb_schema *yb_schema_of_version(const yb_catalog *cat, uint64_t version);

/* _kernel_writes.c: the pair rows of one ReplicateMsg (row, with its entry's columns set, is the template) */
int yb_write_rows(const uint8_t *b, const yb_rec *write_batch, const yb_row *entry, const uint8_t *txn,
                  size_t txn_len, yb_rows *r, const yb_catalog *cat);
void yb_writes_free(void);
/* _kernel_tables.c */
int yb_catalog_set(yb_catalog *cat, PyObject *schemas, PyObject *current);
void yb_catalog_free(yb_catalog *cat);
PyObject *yb_take_writes(yb_rows *r, size_t from, size_t to, size_t n);

/* _kernel.c */
int yb_row_value(yb_rows *r, int column, const uint8_t *s, size_t n);
int yb_row_null(yb_rows *r, int column);

#endif
