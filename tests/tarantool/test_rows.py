"""decode_payload on real block payloads: one test body over every implementation (the Python reference and the
C kernel, each as column lists and through the Arrow column builders)."""

from __future__ import annotations

import msgpack
import pytest

from spark_logsource.errors import CorruptDataError
from spark_logsource.tarantool.decode import rows
from spark_logsource.tarantool.xlog.blocks import Block
from tests.support.tarantool_columns import builder_decoder, kernel_module
from tests.support.tarantool_files import all_blocks

IMPLEMENTATIONS = [rows.decode_payload_py, builder_decoder("python"), builder_decoder("c"),
                   kernel_module().decode_payload]
IDS = ["reference-lists", "python-columns", "c-columns", "c-lists"]

PAYLOADS = [b.payload for _, b in all_blocks() if isinstance(b, Block)]


@pytest.mark.parametrize("decode", IMPLEMENTATIONS, ids=IDS)
@pytest.mark.parametrize("fmt", rows.TUPLE_FORMATS)
def test_real_payloads_decode_and_agree(decode, fmt: str) -> None:
    for payload in PAYLOADS:
        cols = decode(payload, fmt, "p", 7)
        assert list(cols) == list(rows.output_keys(fmt))
        assert len({len(v) for v in cols.values()}) == 1
        assert cols == rows.decode_payload_py(payload, fmt, "p", 7)
        if fmt == "msgpack":
            for value in cols["tuple"] + cols["key"] + cols["ops"] + cols["extra"]:
                if value is not None:
                    msgpack.unpackb(value, strict_map_key=False)  # each is exactly one msgpack value


@pytest.mark.parametrize("decode", IMPLEMENTATIONS, ids=IDS)
@pytest.mark.parametrize("fmt", rows.TUPLE_FORMATS)
def test_truncated_payloads_raise_corrupt_data(decode, fmt: str) -> None:
    payload = max((p for p in PAYLOADS if len(p) < 3000), key=len)
    whole = rows.decode_payload_py(payload, "msgpack", "p", 0)
    assert len(whole["lsn"]) > 3
    for cut in range(1, len(payload)):
        try:
            cols = decode(payload[:cut], fmt, "p", 99)
        except CorruptDataError as exc:
            assert exc.path == "p" and exc.offset == 99
            assert exc.reason.startswith("row ") and " at payload byte " in exc.reason
        else:
            # a cut on a row boundary (or right after the last row's header: a row without body) decodes
            assert len(cols["lsn"]) <= len(whole["lsn"])
