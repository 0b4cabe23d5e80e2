"""Arrow schema → Spark schema, for the schemas our formats declare (and nothing more)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)


def _is_variant(field: pa.Field) -> bool:
    return bool(field.metadata) and field.metadata.get(b"variant") == b"true"


def spark_type(field: pa.Field) -> DataType:
    """The Spark type Spark expects for ``field`` when reading our Arrow batches."""
    if _is_variant(field):
        return VariantType()
    t = field.type
    if pa.types.is_string(t):
        return StringType()
    if pa.types.is_int64(t):
        return LongType()
    if pa.types.is_int32(t):
        return IntegerType()
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_binary(t):
        return BinaryType()
    if pa.types.is_timestamp(t) and t.unit == "us" and t.tz == "UTC":
        return TimestampType()
    if pa.types.is_decimal128(t):
        return DecimalType(t.precision, t.scale)
    # the typed table views (docs/formats/mysql-typed.md "Type mapping")
    if pa.types.is_int16(t):
        return ShortType()
    if pa.types.is_int8(t):
        return ByteType()
    if pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_date32(t):
        return DateType()
    if pa.types.is_timestamp(t) and t.unit == "us" and t.tz is None:
        return TimestampNTZType()
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, spark_type(f), f.nullable) for f in t])
    raise TypeError(f"no Spark type for Arrow field {field}")


def spark_schema(schema: pa.Schema) -> StructType:
    return StructType([StructField(f.name, spark_type(f), f.nullable) for f in schema])
