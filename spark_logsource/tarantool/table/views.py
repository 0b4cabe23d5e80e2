"""Build the typed view (``view=space`` or ``view=state``) a :class:`TarantoolXlogFormat` was asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_logsource.tarantool.table.space_view import SpaceView
from spark_logsource.tarantool.table.state import StateView

if TYPE_CHECKING:
    from spark_logsource.tarantool.format import TarantoolXlogFormat


def make_typed_view(fmt: TarantoolXlogFormat, options: dict[str, Any]) -> SpaceView | StateView:
    """A :class:`~.space_view.SpaceView` or a :class:`~.state.StateView` for the parsed view options."""
    if options["view"] == "space":
        return SpaceView(fmt, options["space"])
    return StateView(fmt, options["space"], options["as_of_lsn"], options["partitions"])
