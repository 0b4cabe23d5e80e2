"""Session-scoped fixtures for a real mariadb server (filled in by the mariadb tests' owner)."""
