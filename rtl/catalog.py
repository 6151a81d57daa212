"""Every exportable block: its Verilog module name, factory and default parameters.

A block module lists what it exports in a module-level ``EXPORTS`` (a list of
:class:`BlockSpec`); this catalog imports the modules named in :data:`BLOCK_MODULES`.
The command line (``gse export``/``gse bench``) and the test harness both go
through here, so a block is exported the same way everywhere.
"""

import importlib
from dataclasses import dataclass, field

__all__ = ["BlockSpec", "BLOCK_MODULES", "blocks", "get_block", "resolve_params"]

#: Modules of ``opengse.rtl`` that define ``EXPORTS``.
BLOCK_MODULES = [
    "opengse.rtl.header.tagger",
    "opengse.rtl.header.parser",
    "opengse.rtl.voq.buffer",
    "opengse.rtl.dgsq.arbiter",
    "opengse.rtl.dgsq.manager",
    "opengse.rtl.header.control_frames",
    "opengse.rtl.pktc.sprayer",
    "opengse.rtl.pktc.link_monitor",
    "opengse.rtl.pktc.reorder",
    "opengse.rtl.pktc.ecmp_selector",
    "opengse.rtl.lib.packet_mux",
    "opengse.rtl.lib.packet_demux",
    "opengse.rtl.lib.skid_buffer",
    "opengse.rtl.lib.pause_fifo",
    "opengse.rtl.lib.pause_gate",
    "opengse.rtl.dgsq.control_demux",
    "opengse.rtl.dgsq.grant_framing",
    "opengse.rtl.dgsq.container_framing",
    "opengse.rtl.mac.mac",
    "opengse.rtl.tops.spine",
    "opengse.rtl.tb.link",
    "opengse.rtl.tb.traffic_gen",
    "opengse.rtl.tb.traffic_check",
    "opengse.rtl.tops.leaf",
]


@dataclass
class BlockSpec:
    name: str  # short name on the command line: ``gse export parser``
    module: str  # Verilog module name (fixed)
    factory: object  # callable(**params) -> wiring.Component
    params: dict  # defaults; also the parameter types (int)
    description: str = ""
    keep_modules: object = None  # callable(**params) -> {hierarchy path: module name}, or None
    aliases: tuple = field(default_factory=tuple)

    def build(self, **params):
        return self.factory(**resolve_params(self, params))

    def kept_modules(self, **params):
        if self.keep_modules is None:
            return None
        return self.keep_modules(**resolve_params(self, params))


def blocks():
    """``{name: BlockSpec}`` for every block, aliases included."""
    out = {}
    for mod_name in BLOCK_MODULES:
        mod = importlib.import_module(mod_name)
        for spec in mod.EXPORTS:
            out[spec.name] = spec
            for alias in spec.aliases:
                out[alias] = spec
    return out


def get_block(name):
    table = blocks()
    if name not in table:
        raise KeyError(
            f"unknown block {name!r}; known blocks: " + ", ".join(sorted({s.name for s in table.values()}))
        )
    return table[name]


def resolve_params(spec, params):
    """Defaults overlaid with ``params``; unknown names and non-integers are errors."""
    out = dict(spec.params)
    for key, value in params.items():
        if key not in spec.params:
            raise ValueError(
                f"block {spec.name!r} has no parameter {key!r}; parameters: {', '.join(sorted(spec.params))}"
            )
        if isinstance(value, str):
            try:
                value = int(value, 0)
            except ValueError:
                raise ValueError(f"parameter {key!r} takes an integer, not {value!r}") from None
        out[key] = value
    return out
