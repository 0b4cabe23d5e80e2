"""Option parsing: Spark's string conventions and Python keyword values give the same results and errors."""

from __future__ import annotations

import pytest

from spark_logsource.errors import OptionError
from spark_logsource.options import OptionMap, ParseMode


def test_names_are_case_insensitive_and_booleans_parse_explicitly() -> None:
    opts = OptionMap({"VerifyChecksums": "false", "recursivefilelookup": "TRUE"})
    assert opts.boolean("verifyChecksums", True) is False
    assert opts.boolean("recursiveFileLookup", False) is True
    with pytest.raises(OptionError, match="'verifyChecksums'.*true or false"):
        OptionMap({"verifyChecksums": "nope"}).boolean("verifyChecksums", True)


@pytest.mark.parametrize(("text", "expected"), [("134217728", 134217728), ("128m", 128 << 20), ("1g", 1 << 30),
                                                 ("64 KB", 64 << 10), (4096, 4096)])
def test_sizes(text, expected) -> None:
    assert OptionMap({"maxPartitionBytes": text}).size("maxPartitionBytes", 1) == expected


@pytest.mark.parametrize("bad", ["-1", "12q", "0", "lots"])
def test_bad_sizes_name_the_option(bad) -> None:
    with pytest.raises(OptionError, match="maxPartitionBytes"):
        OptionMap({"maxPartitionBytes": bad}).size("maxPartitionBytes", 1)


def test_lists_and_choices() -> None:
    opts = OptionMap({"spaceId": "512, 513", "mode": "dropmalformed", "types": ["insert", "DELETE"]})
    assert opts.int_list("spaceId") == [512, 513]
    assert opts.str_list("types") == ["insert", "DELETE"]
    assert opts.common().mode is ParseMode.DROPMALFORMED
    with pytest.raises(OptionError, match="spaceId"):
        OptionMap({"spaceId": "512,x"}).int_list("spaceId")
    with pytest.raises(OptionError, match="mode.*PERMISSIVE"):
        OptionMap({"mode": "lenient"}).common()


def test_paths_from_spark_json_array_and_unknown_options() -> None:
    opts = OptionMap({"paths": '["/a", "/b"]', "path": "/c", "spaceid": "1", "spaceIdd": "2"})
    assert opts.paths() == ["/c", "/a", "/b"]
    opts.int_list("spaceId")
    with pytest.raises(OptionError, match="spaceIdd.*unknown option.*did you mean 'spaceId'"):
        opts.check_all_used()


def test_corrupt_column_only_in_permissive_mode() -> None:
    assert OptionMap({}).common().corrupt_column_or_none == "_corrupt_record"
    assert OptionMap({"columnNameOfCorruptRecord": "bad"}).common().corrupt_column_or_none == "bad"
    assert OptionMap({"mode": "FAILFAST"}).common().corrupt_column_or_none is None
