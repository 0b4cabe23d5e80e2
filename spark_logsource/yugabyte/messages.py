"""YugabyteDB's WAL protobuf messages, by field number, and the decoding of one entry batch.

Field numbers follow YugabyteDB's ``.proto`` files (``consensus/log.proto``, ``consensus/consensus.proto``,
``tablet/operations.proto``, ``docdb/docdb.proto``, ``common/common.proto``), summarised in
``docs/formats/yugabyte-wal.md``. Only the fields a reader needs are named; every other field is kept under
``field_<n>`` so that newer servers' additions are visible rather than lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import DecodeError
from spark_logsource.yugabyte.proto import LEN, FieldSpec, MessageSpec, decode, iter_fields, signed64

__all__ = [
    "OP_TYPES",
    "BatchRecord",
    "EntryRecord",
    "decode_batch",
    "decode_footer",
    "decode_header",
    "decode_index_block_header",
    "kernel_specs",
    "op_type_number",
]

#: ``OperationType`` (consensus_types.proto); numbers not listed are kept as their decimal text.
OP_TYPES: dict[int, str] = {
    0: "UNKNOWN_OP", 1: "NO_OP", 3: "WRITE_OP", 4: "CHANGE_METADATA_OP", 5: "CHANGE_CONFIG_OP",
    6: "UPDATE_TRANSACTION_OP", 7: "SNAPSHOT_OP", 8: "TRUNCATE_OP", 9: "HISTORY_CUTOFF_OP", 10: "SPLIT_OP",
    11: "CHANGE_AUTO_FLAGS_CONFIG_OP", 12: "CLONE_OP",
}
_OP_NUMBERS = {name: number for number, name in OP_TYPES.items()}

#: ``TransactionStatus`` (common/transaction.proto).
TRANSACTION_STATUSES: dict[int, str] = {
    1: "CREATED", 2: "PENDING", 4: "COMMITTED", 5: "SEALED", 7: "APPLIED_IN_ALL_INVOLVED_TABLETS", 8: "ABORTED",
    9: "PROMOTED", 20: "APPLYING", 21: "APPLIED_IN_ONE_OF_INVOLVED_TABLETS", 22: "IMMEDIATE_CLEANUP",
    23: "GRACEFUL_CLEANUP",
}

#: ``LogEntryTypePB``: only REPLICATE entries reach the disk.
ENTRY_TYPES = {0: "UNKNOWN", 1: "REPLICATE", 998: "SYNC_ROLLOVER_MARKER", 999: "FLUSH_MARKER",
               1000: "ASYNC_ROLLOVER_AT_FLUSH_MARKER"}

#: ``PersistentDataType`` (common/value.proto), the ``main`` of a column's QLTypePB.
DATA_TYPES: dict[int, str] = {
    0: "NULL_VALUE_TYPE", 1: "INT8", 2: "INT16", 3: "INT32", 4: "INT64", 5: "STRING", 6: "BOOL", 7: "FLOAT",
    8: "DOUBLE", 9: "BINARY", 10: "TIMESTAMP", 11: "DECIMAL", 12: "VARINT", 13: "INET", 14: "LIST", 15: "MAP",
    16: "SET", 17: "UUID", 18: "TIMEUUID", 19: "TUPLE", 20: "TYPEARGS", 21: "USER_DEFINED_TYPE", 22: "FROZEN",
    23: "DATE", 24: "TIME", 25: "JSONB", 100: "UINT8", 101: "UINT16", 102: "UINT32", 103: "UINT64",
    104: "GIN_NULL", 999: "UNKNOWN_DATA",
}
_ISOLATION = {0: "NON_TRANSACTIONAL", 1: "SNAPSHOT_ISOLATION", 2: "SERIALIZABLE_ISOLATION", 3: "READ_COMMITTED"}
_LOCALITY = {1: "GLOBAL", 2: "LOCAL"}


def f(number: int, name: str, kind: str, *, repeated: bool = False, message: MessageSpec | None = None,
      enum: dict[int, str] | None = None) -> tuple[int, FieldSpec]:
    """One field of a spec, with its number (so specs read like the .proto text)."""
    return number, FieldSpec(name, kind, repeated, message, enum)


def _spec(name: str, *fields: tuple[int, FieldSpec]) -> MessageSpec:
    return MessageSpec(name, dict(fields))


OP_ID = _spec("OpIdPB", f(1, "term", "int64"), f(2, "index", "int64"))
EMPTY = _spec("Message")  # a message whose fields we do not name: all kept as field_<n>

QL_TYPE = _spec("QLTypePB", f(1, "main", "enum", enum=DATA_TYPES))
QL_TYPE.fields[2] = FieldSpec("params", "message", True, QL_TYPE)
COLUMN_SCHEMA = _spec(
    "ColumnSchemaPB",
    f(1, "id", "uint32"), f(2, "name", "string"), f(3, "type", "message", message=QL_TYPE),
    f(4, "is_key", "bool"), f(5, "is_hash_key", "bool"), f(6, "is_nullable", "bool"), f(7, "is_static", "bool"),
    f(8, "is_counter", "bool"), f(9, "sorting_type", "uint32"), f(12, "order", "int32"),
    f(14, "pg_type_oid", "uint32"), f(15, "marked_for_deletion", "bool"), f(16, "missing_value", "message",
                                                                              message=EMPTY),
)
TABLE_PROPERTIES = _spec(
    "TablePropertiesPB",
    f(1, "default_time_to_live", "uint64"), f(2, "contain_counters", "bool"), f(3, "is_transactional", "bool"),
    f(4, "copartition_table_id", "id"), f(5, "consistency_level", "enum"), f(6, "use_mangled_column_name", "bool"),
    f(7, "num_tablets", "int32"), f(8, "is_ysql_catalog_table", "bool"), f(9, "retain_delete_markers", "bool"),
    f(10, "backfilling_timestamp", "uint64"),
)
COLOCATED_ID = _spec("ColocatedTableIdentifierPB", f(1, "pgtable_id", "uint32"), f(2, "cotable_id", "bytes"),
                     f(3, "colocation_id", "uint32"))
SCHEMA = _spec(
    "SchemaPB",
    f(1, "columns", "message", repeated=True, message=COLUMN_SCHEMA),
    f(2, "table_properties", "message", message=TABLE_PROPERTIES),
    f(3, "colocated_table_id", "message", message=COLOCATED_ID),
    f(4, "pgschema_name", "string"),
)
SCHEMA.cached = True

SEGMENT_HEADER = _spec(
    "LogSegmentHeaderPB",
    f(1, "major_version", "uint32"), f(2, "minor_version", "uint32"), f(5, "tablet_id", "id"),
    f(6, "sequence_number", "int64"), f(7, "schema", "message", message=SCHEMA), f(8, "schema_version", "uint32"),
)
SEGMENT_FOOTER = _spec(
    "LogSegmentFooterPB",
    f(1, "num_entries", "int64"), f(2, "min_replicate_index", "int64"), f(3, "max_replicate_index", "int64"),
    f(4, "close_timestamp_micros", "int64"), f(5, "index_start_offset", "int64"),
)
INDEX_BLOCK_HEADER = _spec(
    "LogIndexBlockHeaderPB",
    f(1, "start_op_index", "int64"), f(2, "num_entries", "int32"), f(3, "size", "int64"),
    f(4, "is_last_block", "bool"), f(5, "crc32c", "fixed32"),
)

ABORTED_SET = _spec("AbortedSubTransactionSetPB", f(1, "set", "uint32", repeated=True))
TRANSACTION_METADATA = _spec(
    "TransactionMetadataPB",
    f(1, "transaction_id", "uuid"), f(2, "isolation", "enum", enum=_ISOLATION), f(3, "status_tablet", "id"),
    f(4, "priority", "fixed64"), f(5, "start_hybrid_time", "fixed64"), f(6, "metadata_write_time", "fixed64"),
    f(7, "locality", "enum", enum=_LOCALITY), f(9, "pg_txn_start_us", "int64"),
)
KEY_VALUE_PAIR = _spec("KeyValuePairPB", f(1, "key", "raw"), f(2, "value", "raw"),
                       f(3, "external_hybrid_time", "fixed64"))
WRITE_BATCH = _spec(
    "KeyValueWriteBatchPB",
    f(1, "write_pairs", "message", repeated=True, message=KEY_VALUE_PAIR),
    f(2, "transaction", "message", message=TRANSACTION_METADATA),
    f(3, "may_have_metadata", "bool"),
    f(5, "read_pairs", "message", repeated=True, message=KEY_VALUE_PAIR),
    f(6, "row_mark_type", "enum"),
    f(7, "apply_external_transactions", "message", repeated=True,
      message=_spec("ApplyExternalTransactionPB", f(1, "transaction_id", "uuid"),
                    f(2, "commit_hybrid_time", "fixed64"))),
    f(8, "subtransaction", "message",
      message=_spec("SubTransactionMetadataPB", f(1, "subtransaction_id", "uint32"),
                    f(2, "aborted", "message", message=ABORTED_SET))),
    f(9, "ttl", "int64"),
    f(10, "wait_policy", "enum"),
    f(11, "table_schema_version", "message", repeated=True,
      message=_spec("TableSchemaVersionPB", f(1, "table_id", "id"), f(2, "schema_version", "uint32"))),
)
WRITE = _spec(
    "WritePB",
    f(1, "unused_tablet_id", "id"), f(7, "write_batch", "message", message=WRITE_BATCH),
    f(14, "client_id1", "fixed64"), f(15, "client_id2", "fixed64"), f(16, "request_id", "int64"),
    f(17, "min_running_request_id", "int64"), f(19, "external_hybrid_time", "fixed64"), f(20, "batch_idx", "uint64"),
    f(21, "start_time_micros", "uint64"),
)
TRANSACTION_STATE = _spec(
    "TransactionStatePB",
    f(1, "transaction_id", "uuid"), f(2, "status", "enum", enum=TRANSACTION_STATUSES),
    f(3, "tablets", "id", repeated=True), f(4, "commit_hybrid_time", "fixed64"),
    f(5, "tablet_batches", "int64", repeated=True), f(6, "sealed", "bool"),
    f(7, "aborted", "message", message=ABORTED_SET), f(11, "host_node_uuid", "id"),
)
CHANGE_METADATA = _spec(
    "ChangeMetadataRequestPB",
    f(1, "tablet_id", "id"), f(2, "schema", "message", message=SCHEMA), f(3, "schema_version", "uint32"),
    f(4, "new_table_name", "string"), f(5, "dest_uuid", "id"), f(6, "propagated_hybrid_time", "fixed64"),
    f(7, "indexes", "message", repeated=True, message=EMPTY), f(8, "add_table", "message", message=EMPTY),
    f(9, "wal_retention_secs", "uint32"), f(10, "remove_table_id", "id"), f(11, "mark_backfill_done", "bool"),
    f(12, "alter_table_id", "id"), f(13, "backfill_done_table_id", "id"), f(14, "transaction_id", "uuid"),
    f(16, "should_abort_active_txns", "bool"),
)
SPLIT_REQUEST = _spec(
    "SplitTabletRequestPB",
    f(1, "dest_uuid", "id"), f(2, "propagated_hybrid_time", "fixed64"), f(3, "tablet_id", "id"),
    f(4, "new_tablet1_id", "id"), f(5, "new_tablet2_id", "id"), f(6, "split_partition_key", "bytes"),
    f(7, "split_encoded_key", "bytes"), f(8, "split_parent_leader_uuid", "string"),
)
REPLICATE_MSG = _spec(
    "ReplicateMsg",
    f(1, "id", "message", message=OP_ID), f(2, "hybrid_time", "fixed64"),
    f(4, "op_type", "enum", enum=OP_TYPES), f(5, "write", "message", message=WRITE),
    f(6, "change_metadata_request", "message", message=CHANGE_METADATA),
    f(7, "change_config_record", "message", message=EMPTY), f(8, "committed_op_id", "message", message=OP_ID),
    f(9, "monotonic_counter", "int64"), f(10, "transaction_state", "message", message=TRANSACTION_STATE),
    f(11, "snapshot_request", "message", message=EMPTY), f(12, "truncate", "message", message=EMPTY),
    f(13, "history_cutoff", "message", message=EMPTY), f(14, "split_request", "message", message=SPLIT_REQUEST),
    f(15, "auto_flags_config", "message", message=EMPTY), f(999, "noop_request", "message", message=EMPTY),
)


def op_type_number(name: str) -> int | None:
    """The OperationType number of a name (any case), or None."""
    return _OP_NUMBERS.get(name.upper())


@dataclass(slots=True)
class EntryRecord:
    """One REPLICATE entry, its columns pulled out of the message; ``details`` holds the rest by field name."""

    entry_in_batch: int
    term: int | None
    index: int | None
    hybrid_time: int | None
    op_type: str | None
    committed_term: int | None
    committed_index: int | None
    transaction_id: str | None
    transaction_status: str | None
    details: dict[str, Any]
    #: (key, value) bytes of ``write.write_batch.write_pairs`` (the writes view's rows).
    pairs: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: The new schema and its version, for a CHANGE_METADATA_OP that carries one.
    schema: dict[str, Any] | None = None
    schema_version: int | None = None


@dataclass(slots=True)
class BatchRecord:
    """One ``LogEntryBatchPB``."""

    committed_op_id: tuple[int, int] | None
    mono_time: int | None
    entries: list[EntryRecord]


def _pairs(batch: dict[str, Any], name: str) -> list[tuple[bytes, bytes]]:
    items = batch.pop(name, None) or []
    batch[f"num_{name}"] = len(items)
    return [(p.get("key", b""), p.get("value", b"")) for p in items]


LOG_ENTRY = _spec("LogEntryPB", f(1, "type", "enum", enum=ENTRY_TYPES),
                  f(2, "replicate", "message", message=REPLICATE_MSG))
LOG_ENTRY_BATCH = _spec("LogEntryBatchPB", f(1, "entry", "message", repeated=True, message=LOG_ENTRY),
                        f(2, "committed_op_id", "message", message=OP_ID), f(3, "mono_time", "uint64"))


def _entry(entry: dict[str, Any], entry_in_batch: int) -> EntryRecord:
    entry_type = entry.get("type")
    if entry_type != "REPLICATE":
        raise DecodeError(None, f"log entry {entry_in_batch} of type {entry_type or 'missing'}, expected REPLICATE")
    msg = entry.get("replicate")
    if msg is None:
        raise DecodeError(None, f"REPLICATE entry {entry_in_batch} without a ReplicateMsg")
    op_id = msg.pop("id", None) or {}
    committed = msg.pop("committed_op_id", None)
    op_type = msg.pop("op_type", None)
    record = EntryRecord(
        entry_in_batch=entry_in_batch,
        term=op_id.get("term"),
        index=op_id.get("index"),
        hybrid_time=msg.pop("hybrid_time", None),
        op_type=None if op_type is None else str(op_type),
        committed_term=None if committed is None else committed.get("term"),
        committed_index=None if committed is None else committed.get("index"),
        transaction_id=None,
        transaction_status=None,
        details=msg,
    )
    write = msg.get("write")
    write_batch = None if write is None else write.get("write_batch")
    if write_batch is not None:
        record.pairs = _pairs(write_batch, "write_pairs")
        if "read_pairs" in write_batch:
            _pairs(write_batch, "read_pairs")
        txn = write_batch.get("transaction")
        if txn is not None:
            record.transaction_id = txn.get("transaction_id")
    state = msg.get("transaction_state")
    if state is not None:
        record.transaction_id = state.get("transaction_id")
        status = state.get("status")
        record.transaction_status = None if status is None else str(status)
    change = msg.get("change_metadata_request")
    if change is not None and "schema" in change:
        record.schema = change["schema"]
        record.schema_version = change.get("schema_version")
    return record


def decode_batch(buf: bytes) -> BatchRecord:
    """A serialized ``LogEntryBatchPB`` → its entries (raises DecodeError with a position inside ``buf``)."""
    batch = decode(buf, LOG_ENTRY_BATCH)
    committed = batch.get("committed_op_id")
    return BatchRecord(
        None if committed is None else (committed.get("term", 0), committed.get("index", 0)),
        batch.get("mono_time"),
        [_entry(e, i) for i, e in enumerate(batch.get("entry", ()))],
    )


def _fields(buf: bytes, begin: int, stop: int) -> list[tuple[int, int, Any]]:
    try:
        return list(iter_fields(buf, begin, stop))
    except DecodeError:
        return []


def batch_op_ids(buf: bytes) -> list[tuple[int, int]]:
    """``(term, index)`` of each entry of a serialized batch, reading nothing else (for planning streams)."""
    out = []
    for number, wire, value in _fields(buf, 0, len(buf)):
        if number != 1 or wire != LEN:
            continue
        for n2, w2, v2 in _fields(buf, *value):
            if n2 != 2 or w2 != LEN:
                continue
            for n3, w3, v3 in _fields(buf, *v2):
                if n3 == 1 and w3 == LEN:
                    op = {n: v for n, w, v in _fields(buf, *v3) if w == 0}
                    out.append((signed64(op.get(1, 0)), signed64(op.get(2, 0))))
    return out


def has_schema_change(buf: bytes) -> bool:
    """Whether some ReplicateMsg of a serialized batch carries a change_metadata_request (field 6)."""
    for number, wire, value in _fields(buf, 0, len(buf)):
        if number == 1 and wire == LEN:
            for n2, w2, v2 in _fields(buf, *value):
                if n2 == 2 and w2 == LEN and any(n3 == 6 for n3, _, _ in _fields(buf, *v2)):
                    return True
    return False


def decode_header(buf: bytes) -> dict[str, Any]:
    """``LogSegmentHeaderPB`` by field name."""
    return decode(buf, SEGMENT_HEADER)


def decode_footer(buf: bytes) -> dict[str, Any]:
    """``LogSegmentFooterPB`` by field name, with proto2 defaults for the min/max index (-1 = no entry)."""
    footer = decode(buf, SEGMENT_FOOTER)
    footer.setdefault("min_replicate_index", -1)
    footer.setdefault("max_replicate_index", -1)
    return footer


def decode_index_block_header(buf: bytes) -> dict[str, Any]:
    """``LogIndexBlockHeaderPB`` by field name."""
    return decode(buf, INDEX_BLOCK_HEADER)


#: The field kinds in the order the C kernel numbers them (``yugabyte/_kernel.h``, ``YK_*``).
KIND_CODES = ("int64", "uint64", "int32", "uint32", "bool", "enum", "fixed64", "double", "fixed32", "float",
              "bytes", "string", "id", "uuid", "raw", "message")


def kernel_specs() -> tuple[list[list[tuple[int, str, int, bool, int, int]]], list[list[tuple[int, str]]], int, int]:
    """These specs as the C kernel takes them (``_kernel.set_specs``): the messages reachable from ``ReplicateMsg``
    (each a list of ``(number, name, kind code, repeated, message number or -1, enum number or -1)``), the enums
    (``(number, name)`` lists), and the numbers of ``ReplicateMsg`` and ``KeyValueWriteBatchPB``.

    The twins read one set of definitions: a field named here is named the same by the kernel.
    """
    numbers: dict[int, int] = {}
    order: list[MessageSpec] = []
    enums: list[list[tuple[int, str]]] = []
    enum_numbers: dict[int, int] = {}

    def visit(spec: MessageSpec) -> int:
        if id(spec) not in numbers:
            numbers[id(spec)] = len(order)
            order.append(spec)
            for fs in spec.fields.values():
                if fs.message is not None:
                    visit(fs.message)
        return numbers[id(spec)]

    visit(REPLICATE_MSG)
    specs = []
    for spec in order:
        fields = []
        for number, fs in sorted(spec.fields.items()):
            enum = -1
            if fs.enum:
                if id(fs.enum) not in enum_numbers:
                    enum_numbers[id(fs.enum)] = len(enums)
                    enums.append(sorted(fs.enum.items()))
                enum = enum_numbers[id(fs.enum)]
            sub = numbers[id(fs.message)] if fs.message is not None else -1
            fields.append((number, fs.name, KIND_CODES.index(fs.kind), fs.repeated, sub, enum))
        specs.append(fields)
    return specs, enums, numbers[id(REPLICATE_MSG)], numbers[id(WRITE_BATCH)]
