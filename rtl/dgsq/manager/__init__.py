"""The DGSQ manager (``gse_dgsq_manager``): the source side of DGSQ request/grant.

:class:`DGSQManager` (top.py) is a top of named parts, one file each; see its module
docstring and docs/dgsq.md.
"""
from ...interfaces import ControlHeaderLayout
from .layouts import GrantInLayout, pkt_in_layout
from .top import EXPORTS, DGSQManager

__all__ = ["DGSQManager", "EXPORTS", "pkt_in_layout", "GrantInLayout", "ControlHeaderLayout"]
