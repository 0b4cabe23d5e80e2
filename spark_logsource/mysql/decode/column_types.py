"""MySQL/MariaDB column type codes, TABLE_MAP per-column metadata sizes and collation → codec mapping.

Type codes are ``enum_field_types`` of mysql-server ``include/field_types.h`` (MariaDB ``include/mysql_com.h``).
The per-type metadata layout in TABLE_MAP follows mysql-server ``libs/mysql/binlog/event/rows_event.cpp``
(``Table_map_event`` / ``table_def``) and MariaDB ``sql/log_event.cc``; see ``docs/formats/mysql-binlog.md``
"TABLE_MAP".
"""

from __future__ import annotations

import codecs

__all__ = [
    "BINARY_COLLATION",
    "CHARACTER_TYPES",
    "NUMERIC_TYPES",
    "TYPE_NAMES",
    "charset_of_collation",
    "codec_for_collation",
    "collation_for_charset",
    "metadata_size",
]

DECIMAL = 0
TINY = 1
SHORT = 2
LONG = 3
FLOAT = 4
DOUBLE = 5
NULL = 6
TIMESTAMP = 7
LONGLONG = 8
INT24 = 9
DATE = 10
TIME = 11
DATETIME = 12
YEAR = 13
NEWDATE = 14
VARCHAR = 15
BIT = 16
TIMESTAMP2 = 17
DATETIME2 = 18
TIME2 = 19
TYPED_ARRAY = 20
VECTOR = 242
INVALID = 243
BOOL = 244
JSON = 245
NEWDECIMAL = 246
ENUM = 247
SET = 248
TINY_BLOB = 249
MEDIUM_BLOB = 250
LONG_BLOB = 251
BLOB = 252
VAR_STRING = 253
STRING = 254
GEOMETRY = 255

TYPE_NAMES: dict[int, str] = {
    DECIMAL: "DECIMAL", TINY: "TINY", SHORT: "SHORT", LONG: "LONG", FLOAT: "FLOAT", DOUBLE: "DOUBLE",
    NULL: "NULL", TIMESTAMP: "TIMESTAMP", LONGLONG: "LONGLONG", INT24: "INT24", DATE: "DATE", TIME: "TIME",
    DATETIME: "DATETIME", YEAR: "YEAR", NEWDATE: "NEWDATE", VARCHAR: "VARCHAR", BIT: "BIT",
    TIMESTAMP2: "TIMESTAMP2", DATETIME2: "DATETIME2", TIME2: "TIME2", TYPED_ARRAY: "TYPED_ARRAY",
    VECTOR: "VECTOR", JSON: "JSON", NEWDECIMAL: "NEWDECIMAL", ENUM: "ENUM", SET: "SET",
    TINY_BLOB: "TINY_BLOB", MEDIUM_BLOB: "MEDIUM_BLOB", LONG_BLOB: "LONG_BLOB", BLOB: "BLOB",
    VAR_STRING: "VAR_STRING", STRING: "STRING", GEOMETRY: "GEOMETRY",
}

#: Columns that get a bit in the SIGNEDNESS optional metadata (mysql-server ``is_numeric_type``).
NUMERIC_TYPES = frozenset({TINY, SHORT, INT24, LONG, LONGLONG, NEWDECIMAL, FLOAT, DOUBLE})
#: Columns (by real type) that get an entry in DEFAULT_CHARSET / COLUMN_CHARSET (``is_character_type``;
#: GEOMETRY too, as a BLOB subclass: verified on MariaDB 10.11, which lists it with the binary collation).
CHARACTER_TYPES = frozenset({STRING, VAR_STRING, VARCHAR, BLOB, TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, GEOMETRY})
#: Columns that get an entry in ENUM_AND_SET_* charsets and names.
ENUM_SET_TYPES = frozenset({ENUM, SET})

#: Bytes of per-column metadata in TABLE_MAP, by type code (absent: 0 bytes).
_METADATA_SIZE: dict[int, int] = {
    FLOAT: 1, DOUBLE: 1, BLOB: 1, TINY_BLOB: 1, MEDIUM_BLOB: 1, LONG_BLOB: 1, GEOMETRY: 1, JSON: 1,
    TIME2: 1, DATETIME2: 1, TIMESTAMP2: 1, VECTOR: 1, TYPED_ARRAY: 1,
    VARCHAR: 2, VAR_STRING: 2, BIT: 2, NEWDECIMAL: 2, STRING: 2, ENUM: 2, SET: 2,
}


def metadata_size(type_code: int) -> int:
    """Number of metadata bytes TABLE_MAP stores for a column of ``type_code``."""
    return _METADATA_SIZE.get(type_code, 0)


BINARY_COLLATION = 63

# Collation ids by character set, as MariaDB 10.11 lists them in information_schema.COLLATIONS, plus
# MySQL 8's utf8mb4 0900 collations (255..323), utf8mb3_tolower_ci (76) and gb18030 (248..250).
_COLLATIONS_BY_CHARSET: dict[str, tuple[int, ...]] = {
    "ascii": (11, 65, 1035, 1089),
    "big5": (1, 84, 1025, 1108),
    "cp1250": (26, 34, 44, 66, 99, 1050, 1090),
    "cp1251": (14, 23, 50, 51, 52, 1074, 1075),
    "cp1256": (57, 67, 1081, 1091),
    "cp1257": (29, 58, 59, 1082, 1083),
    "cp850": (4, 80, 1028, 1104),
    "cp852": (40, 81, 1064, 1105),
    "cp866": (36, 68, 1060, 1092),
    "cp932": (95, 96, 1119, 1120),
    "eucjpms": (97, 98, 1121, 1122),
    "euckr": (19, 85, 1043, 1109),
    "gb2312": (24, 86, 1048, 1110),
    "gbk": (28, 87, 1052, 1111),
    "gb18030": (248, 249, 250),
    "greek": (25, 70, 1049, 1094),
    "hebrew": (16, 71, 1040, 1095),
    "koi8r": (7, 74, 1031, 1098),
    "koi8u": (22, 75, 1046, 1099),
    "latin1": (5, 8, 15, 31, 47, 48, 49, 94, 1032, 1071),
    "latin2": (2, 9, 21, 27, 77, 1033, 1101),
    "latin5": (30, 78, 1054, 1102),
    "latin7": (20, 41, 42, 79, 1065, 1103),
    "macce": (38, 43, 1062, 1067),
    "macroman": (39, 53, 1063, 1077),
    "sjis": (13, 88, 1037, 1112),
    "tis620": (18, 89, 1042, 1113),
    "ucs2": (35, 90, *range(128, 152), 159, 640, 641, 642, 1059, 1114, 1152, 1174),
    "ujis": (12, 91, 1036, 1115),
    "utf16": (54, 55, *range(101, 125), 672, 673, 674, 1078, 1079, 1125, 1147),
    "utf16le": (56, 62, 1080, 1086),
    "utf32": (60, 61, *range(160, 184), 736, 737, 738, 1084, 1085, 1184, 1206),
    "utf8mb3": (33, 76, 83, *range(192, 216), 223, 576, 577, 578, 1057, 1107, 1216, 1238),
    "utf8mb4": (45, 46, *range(224, 248), *range(255, 324), 608, 609, 610, 1069, 1070, 1248, 1270),
}

# Python codec per MySQL character set (MySQL's latin1 is Windows-1252). Character sets without a
# Python codec (armscii8, dec8, geostd8, hp8, keybcs2, swe7) are absent: their values stay bytes.
_CODEC_BY_CHARSET: dict[str, str] = {
    "ascii": "ascii", "big5": "big5", "cp1250": "cp1250", "cp1251": "cp1251", "cp1256": "cp1256",
    "cp1257": "cp1257", "cp850": "cp850", "cp852": "cp852", "cp866": "cp866", "cp932": "cp932",
    "eucjpms": "euc_jp", "euckr": "euc_kr", "gb2312": "gb2312", "gbk": "gbk", "gb18030": "gb18030",
    "greek": "iso8859_7", "hebrew": "iso8859_8", "koi8r": "koi8_r", "koi8u": "koi8_u", "latin1": "cp1252",
    "latin2": "iso8859_2", "latin5": "iso8859_9", "latin7": "iso8859_13", "macce": "mac_latin2",
    "macroman": "mac_roman", "sjis": "shift_jis", "tis620": "tis_620", "ucs2": "utf_16_be",
    "ujis": "euc_jp", "utf16": "utf_16_be", "utf16le": "utf_16_le", "utf32": "utf_32_be",
    "utf8mb3": "utf_8", "utf8mb4": "utf_8",
}

_CODEC_BY_COLLATION: dict[int, str] = {
    cid: codecs.lookup(_CODEC_BY_CHARSET[cs]).name
    for cs, ids in _COLLATIONS_BY_CHARSET.items()
    for cid in ids
}


def codec_for_collation(collation_id: int | None) -> str | None:
    """Python codec name for a collation id, ``"binary"`` for the binary collation, None when unknown."""
    if collation_id is None:
        return None
    if collation_id == BINARY_COLLATION:
        return "binary"
    return _CODEC_BY_COLLATION.get(collation_id)


_CHARSET_BY_COLLATION: dict[int, str] = {cid: cs for cs, ids in _COLLATIONS_BY_CHARSET.items() for cid in ids}
#: Character set names that are other spellings of one in :data:`_COLLATIONS_BY_CHARSET`.
_CHARSET_ALIASES = {"utf8": "utf8mb3"}


def charset_of_collation(collation_id: int) -> str | None:
    """The character set of a collation id (``latin1`` for 8), None when unknown."""
    return _CHARSET_BY_COLLATION.get(collation_id)


def collation_for_charset(name: str) -> int | None:
    """A collation id of character set ``name`` (any one: they share the codec), 63 for ``binary``, None when
    unknown. Used where a declaration names the character set and the binlog does not."""
    name = _CHARSET_ALIASES.get(name.lower(), name.lower())
    if name == "binary":
        return BINARY_COLLATION
    ids = _COLLATIONS_BY_CHARSET.get(name)
    return ids[0] if ids else None
