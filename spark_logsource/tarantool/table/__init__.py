"""The typed views: a space's catalog, its typed columns, replay of changes, ``view=space/state``."""
