"""Board tops on amaranth-boards platforms (docs/boards.md).

:data:`BOARDS` maps a board name to its :class:`~.board.Board`; :data:`TOPS` maps a top
name to a factory ``(board, **options) -> Elaboratable``.
"""

from .board import Board, set_tool_env
from .colorlight_5a75b import BOARD as COLORLIGHT_5A75B
from .ecpix5_85 import BOARD as ECPIX5_85

__all__ = ["BOARDS", "TOPS", "Board", "set_tool_env", "make_top"]

BOARDS = {b.name: b for b in (COLORLIGHT_5A75B, ECPIX5_85)}


def _selftest(board, **options):
    from .selftest import SelfTestTop

    return SelfTestTop(board, **options)


def _leaf(board, **options):
    from .leaf_top import LeafTop

    return LeafTop(board, **options)


TOPS = {"selftest": _selftest, "leaf": _leaf}


def make_top(board_name, top_name, **options):
    """The top ``top_name`` for board ``board_name``; ``KeyError`` naming the choices."""
    if board_name not in BOARDS:
        raise KeyError(f"unknown board {board_name!r}; boards: {', '.join(BOARDS)}")
    if top_name not in TOPS:
        raise KeyError(f"unknown top {top_name!r}; tops: {', '.join(TOPS)}")
    board = BOARDS[board_name]
    return board, TOPS[top_name](board, **options)
