"""NEWDECIMAL binary values (``strings/decimal.cc`` ``bin2decimal`` / ``decimal_bin_size``).

Shared by the row-image decoders (:mod:`.values`), MySQL's binary JSON (:mod:`.jsonb`, opaque DECIMAL) and
USER_VAR events; a module of its own so that those modules do not import each other.
Layout: groups of 9 digits in 4 bytes big-endian, the leftover digits in 0-4 bytes (integer part first,
fraction last), the sign in the flipped top bit, negatives stored one's-complemented.
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["decimal_binary_size", "decimal_groups", "decode_decimal_bytes"]

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_binary_size(precision: int, scale: int) -> int:
    """Bytes of a NEWDECIMAL(precision, scale) value (``decimal_bin_size`` in strings/decimal.cc)."""
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


def decimal_groups(precision: int, scale: int) -> tuple[tuple[int, int, int, int], ...]:
    """(shift, mask, digits multiplier, exclusive limit) of each digit group, most significant first."""
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    widths = ([(_DIG2BYTES[intg0x], intg0x)] if intg0x else []) + [(4, 9)] * (intg0 + frac0)
    if frac0x:
        widths.append((_DIG2BYTES[frac0x], frac0x))
    shift = sum(w for w, _ in widths) * 8
    groups = []
    for nbytes, digits in widths:
        shift -= nbytes * 8
        groups.append((shift, (1 << (nbytes * 8)) - 1, 10**digits, 10**digits))
    return tuple(groups)


def decode_decimal_bytes(raw: bytes, precision: int, scale: int,
                         groups: tuple[tuple[int, int, int, int], ...] | None = None) -> Decimal:
    """Decode one NEWDECIMAL binary value (``bin2decimal``): 9-digit groups in 4 bytes big-endian, the
    leftover digits in 0–4 bytes (integer part first, fraction last), the sign in the flipped top bit,
    negatives stored one's-complemented. Raises ValueError for a digit group out of range."""
    nbits = len(raw) * 8
    negative = not raw[0] & 0x80
    value = int.from_bytes(raw, "big") ^ (1 << (nbits - 1))
    if negative:
        value ^= (1 << nbits) - 1
    unscaled = 0
    for shift, mask, multiplier, limit in groups or decimal_groups(precision, scale):
        group = (value >> shift) & mask
        if group >= limit:
            raise ValueError("decimal digit group out of range")
        unscaled = unscaled * multiplier + group
    return Decimal(f"{'-' if negative else ''}{unscaled}E-{scale}")
