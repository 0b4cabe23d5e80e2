"""DocDB key and packed-row decoding on bytes a real YugabyteDB server wrote.

The key and value below were printed by YugabyteDB's own ``log-dump --print_entries=pb`` from a production WAL
(quoted in a public yugabyte-db issue about log-dump's packed-row output); ``log-dump`` decoded the key as
``DocKey(0x0510, ["ROLE000014"], ["RESC000529"])`` and the row as schema version 1 with eight text columns
``"O", "0", "dpgiam", "20250730", "080038", NULL, NULL, NULL``. The table's column names are not in the issue, so
the schema here names them ``c1..c8`` (all nullable text: every column varlen, as the eight offsets show).
"""

from __future__ import annotations

import struct

from spark_logsource.yugabyte.catalog import TableSchema
from spark_logsource.yugabyte.docdb import decode_doc_key, decode_pairs, decode_value

KEY = b"G\x05\x10SROLE000014\x00\x00!SRESC000529\x00\x00!"
VALUE = b"z\x01" + struct.pack("<8I", 2, 4, 11, 20, 27, 27, 27, 27) + b"SOS0SdpgiamS20250730S080038"

SCHEMA = TableSchema({"pgschema_name": "public", "columns": [
    {"id": 0, "name": "role", "type": {"main": "STRING"}, "is_key": True, "is_hash_key": True, "pg_type_oid": 25},
    {"id": 1, "name": "resource", "type": {"main": "STRING"}, "is_key": True, "pg_type_oid": 25},
    *({"id": 1 + i, "name": f"c{i}", "type": {"main": "STRING"}, "is_nullable": True, "pg_type_oid": 25}
      for i in range(1, 9)),
]}, 1)


def test_key_from_a_real_server() -> None:
    doc = decode_doc_key(KEY)
    assert (doc.hash, doc.hashed, doc.range, doc.subkey) == (0x0510, ["ROLE000014"], ["RESC000529"], None)
    assert doc.end == len(KEY)


def test_packed_row_from_a_real_server() -> None:
    value = decode_value(VALUE, None, lambda v: SCHEMA if v == 1 else None)
    assert value.is_packed and value.schema_version == 1
    assert value.value == {"c1": "O", "c2": "0", "c3": "dpgiam", "c4": "20250730", "c5": "080038", "c6": None,
                           "c7": None, "c8": None}


def test_pair_columns_from_a_real_server() -> None:
    cols = decode_pairs([(KEY, VALUE)], SCHEMA, lambda v: SCHEMA if v == 1 else None, 1)
    assert cols["kind"] == ["insert_packed"]
    assert cols["doc_key"][0]["key"] == {"role": "ROLE000014", "resource": "RESC000529"}
    assert cols["value"][0]["c3"] == "dpgiam"
    assert cols["decode_error"] == [None]
    unknown = decode_pairs([(KEY, VALUE)], SCHEMA, lambda v: None, 1)
    assert unknown["value"] == [None] and "schema version 1" in unknown["decode_error"][0]
