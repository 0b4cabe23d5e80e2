"""Binlogs that grow: tailing a binlog directory and a live server's dump thread."""
