"""Test support for memcached-tap: options matching a recording, items from rows, items a recording expects."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from spark_logsource.memcached.client import (
    BACKFILL,
    CHECKPOINT,
    DUMP,
    LIST_VBUCKETS,
    REGISTERED_CLIENT,
    REQUEST_KEYS_ONLY,
    SUPPORT_ACK,
    TAKEOVER_VBUCKETS,
    ConnectSpec,
)

Item = tuple[int, bytes]  # (vbucket, key)


def spec_from_recording(tap_connect: dict[str, Any]) -> ConnectSpec:
    """The ConnectSpec for a recorded TAP_CONNECT, from its flag bits and userdata as the recording lists them."""
    flags = tap_connect["flags"]
    userdata = bytes.fromhex(tap_connect["userdata_hex"])
    pos = 0
    age = None
    if flags & BACKFILL:
        (age,) = struct.unpack_from(">Q", userdata, pos)
        pos += 8
    vbuckets = None
    if flags & LIST_VBUCKETS:
        (n,) = struct.unpack_from(">H", userdata, pos)
        vbuckets = struct.unpack_from(f">{n}H", userdata, pos + 2)
        pos += 2 + 2 * n
    return ConnectSpec(
        name=bytes.fromhex(tap_connect["name_hex"]),
        dump=bool(flags & DUMP),
        backfill_age=age,
        vbuckets=tuple(vbuckets) if vbuckets is not None else None,
        takeover=bool(flags & TAKEOVER_VBUCKETS),
        support_ack=bool(flags & SUPPORT_ACK),
        keys_only=bool(flags & REQUEST_KEYS_ONLY),
        checkpoint=bool(flags & CHECKPOINT),
        registered=bool(flags & REGISTERED_CLIENT),
    )


def row_key(row: dict[str, Any]) -> bytes:
    return row["key_bytes"] if row["key_bytes"] is not None else row["key"].encode()


def apply_rows(rows: Iterable[dict[str, Any]], state: dict[Item, dict[str, Any]] | None = None
               ) -> dict[Item, dict[str, Any]]:
    """The items after applying rows in stream order: last MUTATION per (vbucket, key) wins, DELETE removes,
    FLUSH empties. This is the idempotent MERGE the streaming guarantee promises is enough."""
    state = {} if state is None else state
    for row in rows:
        if row["opcode"] == "MUTATION":
            state[(row["vbucket"], row_key(row))] = row
        elif row["opcode"] == "DELETE":
            state.pop((row["vbucket"], row_key(row)), None)
        elif row["opcode"] == "FLUSH":
            state.clear()
    return state


def expected_items(header: dict[str, Any]) -> dict[Item, dict[str, Any]]:
    """The items the server answered GETs for after the recording (value, flags as stored by the client, cas)."""
    out = {}
    for item in header["expected_items"]:
        out[(item["vbucket"], bytes.fromhex(item["key_hex"]))] = item
    return out


def item_value(item: dict[str, Any]) -> bytes | None:
    """An expected item's value; huge ones are described by length and sha256 instead of hex."""
    if "value_hex" in item:
        return bytes.fromhex(item["value_hex"])
    return None


def workload_expiry(header: dict[str, Any]) -> dict[bytes, int]:
    """The expiry (seconds) of the last set of each key in the recorded workload."""
    out: dict[bytes, int] = {}
    for op in header["workload"]:
        if op.get("op") == "set" and "key_hex" in op:
            out[bytes.fromhex(op["key_hex"])] = op.get("expiry", 0)
    return out
