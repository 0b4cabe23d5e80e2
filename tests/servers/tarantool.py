"""Session-scoped fixtures for a real tarantool server (filled in by the tarantool tests' owner)."""
