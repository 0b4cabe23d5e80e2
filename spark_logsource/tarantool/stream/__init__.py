"""Logs that grow: tailing a WAL directory and a live server (IPROTO client, anonymous replica)."""
