"""``spark.read.format("memcached-tap")``: captured TAP streams and live memcached / Couchbase TAP servers."""

from spark_logsource.memcached.format import MemcachedTapFormat
from spark_logsource.readers.base import LogDataSource


class MemcachedTapDataSource(LogDataSource):
    format_cls = MemcachedTapFormat
