/*
 * CRC-32 exactly as zlib.crc32 computes it: the reflected polynomial 0xEDB88320, the state inverted before and
 * after. It is the binlog event checksum (docs/formats/mysql-binlog.md, "Checksums").
 *
 * On x86-64 processors with carry-less multiplication (PCLMULQDQ), buffers of 64 bytes and more are folded 64 bytes
 * at a time: four 128-bit lanes, each lane's low 64 bits multiplied by x^(512+32) mod P and its high 64 bits by
 * x^(512-32) mod P, the two products added to the next 64 bytes; then the lanes are folded into one the same way
 * with x^(128+32) and x^(128-32) mod P. The constants are those residues of P = 0x104C11DB7, bit-reflected over 32
 * bits and shifted left by one (the layout zlib's reflected state needs). What is left, 16 bytes and the tail,
 * goes through the byte table. Folding keeps the message's residue mod P, so the result is zlib's to the bit
 * (tests compare the two on every length and alignment). Elsewhere ls_crc32_folds() is 0 and the caller keeps
 * zlib.
 */
#ifndef SPARK_LOGSOURCE_CRC32_H
#define SPARK_LOGSOURCE_CRC32_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LS_CRC32_CAN_FOLD 1
#include <immintrin.h>
#endif

static uint32_t ls_crc32_table[256];
static int ls_crc32_fold_ok, ls_crc32_fold_cpu;

/* Fill the byte table and probe the processor; call once when the module loads. */
static void ls_crc32_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? c >> 1 ^ 0xEDB88320u : c >> 1;
        ls_crc32_table[i] = c;
    }
#ifdef LS_CRC32_CAN_FOLD
    __builtin_cpu_init();
    ls_crc32_fold_cpu = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    ls_crc32_fold_ok = ls_crc32_fold_cpu;
}

/* Whether ls_crc32 folds with PCLMULQDQ (else it is the byte table: slower than zlib, for tests and short data). */
static inline int ls_crc32_folds(void) { return ls_crc32_fold_ok; }

/* Fold where the processor can (on), or never (off: for tests of the callers' other path). */
static inline void ls_crc32_set_folding(int on) { ls_crc32_fold_ok = on && ls_crc32_fold_cpu; }

/* The raw state (not inverted) after the n bytes at p, a byte at a time. */
static inline uint32_t ls_crc32_bytes(uint32_t state, const uint8_t *p, size_t n)
{
    while (n--)
        state = ls_crc32_table[(state ^ *p++) & 0xff] ^ state >> 8;
    return state;
}

#ifdef LS_CRC32_CAN_FOLD
__attribute__((target("pclmul,sse4.1"))) static inline __m128i ls_crc32_fold_lane(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The raw state after the n >= 64 bytes at p. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t ls_crc32_fold(uint32_t state, const uint8_t *p, size_t n)
{
    /* (high, low): x^(512-32), x^(512+32) mod P and x^(128-32), x^(128+32) mod P, reflected and shifted */
    const __m128i by512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i by128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)state));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        x0 = ls_crc32_fold_lane(x0, by512, _mm_loadu_si128((const __m128i *)p));
        x1 = ls_crc32_fold_lane(x1, by512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = ls_crc32_fold_lane(x2, by512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = ls_crc32_fold_lane(x3, by512, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x0 = ls_crc32_fold_lane(x0, by128, x1);
    x0 = ls_crc32_fold_lane(x0, by128, x2);
    x0 = ls_crc32_fold_lane(x0, by128, x3);
    for (; n >= 16; p += 16, n -= 16)
        x0 = ls_crc32_fold_lane(x0, by128, _mm_loadu_si128((const __m128i *)p));
    uint8_t rest[16];
    _mm_storeu_si128((__m128i *)rest, x0);
    return ls_crc32_bytes(ls_crc32_bytes(0, rest, sizeof rest), p, n);
}
#endif

/* zlib.crc32(p[0..n), crc). */
static inline uint32_t ls_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    uint32_t state = ~crc;
#ifdef LS_CRC32_CAN_FOLD
    if (ls_crc32_fold_ok && n >= 64)
        return ~ls_crc32_fold(state, p, n);
#endif
    return ~ls_crc32_bytes(state, p, n);
}

#endif
