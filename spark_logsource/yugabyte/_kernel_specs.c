/*
 * The YugabyteDB WAL kernel's tables: CRC-32C (the entry headers' and bodies' checksum, docs/formats/yugabyte-wal.md
 * "Segment layout") and the message specs messages.py hands over (field numbers, names, kinds, enums).
 */
#include "_kernel.h"

/* ---- CRC-32C (Castagnoli, reflected 0x82F63B78), as the crc32c package computes it ---- */

static uint32_t crc_table[256];
static int crc_hw;

void yb_crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[i] = c;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    for (; n; n--, p++)
        c = __builtin_ia32_crc32qi(c, *p);
    return c;
}
#endif

uint32_t yb_crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
#if defined(__x86_64__)
    if (crc_hw)
        return crc_sse42(c, p, n) ^ 0xFFFFFFFFu;
#endif
    for (; n; n--, p++)
        c = crc_table[(c ^ *p) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* ---- message specs (from messages.py) ---- */

static yb_msg *g_msgs;
static size_t g_nmsgs;
static yb_enum *g_enums;
static size_t g_nenums;
long g_replicate = -1, g_write_batch = -1;


static void free_specs(void)
{
    for (size_t m = 0; m < g_nmsgs; m++) {
        for (size_t k = 0; k < g_msgs[m].n; k++)
            free(g_msgs[m].fields[k].name);
        free(g_msgs[m].fields);
    }
    free(g_msgs);
    for (size_t e = 0; e < g_nenums; e++) {
        for (size_t k = 0; k < g_enums[e].n; k++)
            free(g_enums[e].items[k].name);
        free(g_enums[e].items);
    }
    free(g_enums);
    g_msgs = NULL;
    g_enums = NULL;
    g_nmsgs = g_nenums = 0;
    g_replicate = g_write_batch = -1;
}

void yb_specs_free(void) { free_specs(); }

int yb_specs_ready(void) { return g_msgs != NULL && g_replicate >= 0 && g_write_batch >= 0; }

static char *copy_text(PyObject *s, size_t *len)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL)
        return NULL;
    char *out = malloc((size_t)n + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, u, (size_t)n + 1);
    *len = (size_t)n;
    return out;
}

static int cmp_field(const void *a, const void *b)
{
    const yb_field *x = a, *y = b;
    return (x->number > y->number) - (x->number < y->number);
}

/* specs: [[(number, name, kind, repeated, sub or -1, enum or -1), ...], ...]; enums: [[(number, name), ...], ...].
 * 0, or -1 with a Python error set. */
int yb_set_specs(PyObject *specs, PyObject *enums, long replicate, long write_batch)
{
    free_specs();
    Py_ssize_t nm = PyList_Size(specs), ne = PyList_Size(enums);
    if (nm < 0 || ne < 0)
        return -1;
    g_msgs = calloc((size_t)nm + 1, sizeof *g_msgs);
    g_enums = calloc((size_t)ne + 1, sizeof *g_enums);
    if (g_msgs == NULL || g_enums == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    g_nmsgs = (size_t)nm;
    g_nenums = (size_t)ne;
    for (Py_ssize_t m = 0; m < nm; m++) {
        PyObject *fields = PyList_GetItem(specs, m);
        Py_ssize_t nf = fields ? PyList_Size(fields) : -1;
        if (nf < 0)
            goto fail;
        g_msgs[m].fields = calloc((size_t)nf + 1, sizeof(yb_field));
        if (g_msgs[m].fields == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t k = 0; k < nf; k++) {
            unsigned long long number;
            PyObject *name;
            int kind, repeated, sub, enm;
            if (!PyArg_ParseTuple(PyList_GetItem(fields, k), "KUipii", &number, &name, &kind, &repeated, &sub, &enm))
                goto fail;
            if (kind < YK_INT64 || kind > YK_MESSAGE || sub >= nm || enm >= ne || (kind == YK_MESSAGE && sub < 0)) {
                PyErr_SetString(PyExc_ValueError, "bad message spec");
                goto fail;
            }
            yb_field *f = &g_msgs[m].fields[g_msgs[m].n];
            *f = (yb_field){number, NULL, 0, (uint8_t)kind, (uint8_t)repeated, sub, enm};
            if ((f->name = copy_text(name, &f->name_len)) == NULL)
                goto fail;
            g_msgs[m].n++;
        }
        qsort(g_msgs[m].fields, g_msgs[m].n, sizeof(yb_field), cmp_field);
    }
    for (Py_ssize_t e = 0; e < ne; e++) {
        PyObject *items = PyList_GetItem(enums, e);
        Py_ssize_t ni = items ? PyList_Size(items) : -1;
        if (ni < 0)
            goto fail;
        g_enums[e].items = calloc((size_t)ni + 1, sizeof(yb_enum_item));
        if (g_enums[e].items == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t k = 0; k < ni; k++) {
            long long number;
            PyObject *name;
            if (!PyArg_ParseTuple(PyList_GetItem(items, k), "LU", &number, &name))
                goto fail;
            yb_enum_item *it = &g_enums[e].items[g_enums[e].n];
            it->number = number;
            if ((it->name = copy_text(name, &it->len)) == NULL)
                goto fail;
            g_enums[e].n++;
        }
    }
    if (replicate < 0 || replicate >= nm || write_batch < 0 || write_batch >= nm) {
        PyErr_SetString(PyExc_ValueError, "bad message spec index");
        goto fail;
    }
    g_replicate = replicate;
    g_write_batch = write_batch;
    return 0;
fail:
    free_specs();
    return -1;
}

const yb_field *yb_find_field(long msg, uint64_t number)
{
    const yb_msg *m = &g_msgs[msg];
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->fields[mid].number < number)
            lo = mid + 1;
        else if (m->fields[mid].number > number)
            hi = mid;
        else
            return &m->fields[mid];
    }
    return NULL;
}

const yb_enum_item *yb_find_enum(int32_t enm, int64_t number)
{
    if (enm < 0)
        return NULL;
    const yb_enum *e = &g_enums[enm];
    for (size_t k = 0; k < e->n; k++)
        if (e->items[k].number == number)
            return &e->items[k];
    return NULL;
}

