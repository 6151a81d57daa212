"""The formal properties of the blocks, in one registry: ``gse formal`` runs them.

The registry (:class:`~opengse.sim.formal.registry.Property`, :data:`PROPERTIES`) and
the wrappers live in :mod:`opengse.sim.formal`, one module per block; importing this
module registers every property. See docs/formal.md.
"""

from .formal import (
    arbiter,
    container_framing,
    control_demux,
    control_frames,
    ecmp_selector,
    leaf,
    link,
    link_monitor,
    mac,
    manager,
    parser,
    pause_fifo,
    pause_gate,
    regs,
    reorder,
    spine,
    sprayer,
    stream_blocks,
    tagging,
    traffic_check,
    traffic_gen,
    voq,
)
from .formal.registry import PROPERTIES, Property, inputs_of, register, run_property

__all__ = ["Property", "PROPERTIES", "register", "run_property", "inputs_of", "PROPERTY_MODULES"]

#: The modules that register properties (importing them registers them).
PROPERTY_MODULES = (
    parser,
    tagging,
    control_frames,
    voq,
    arbiter,
    manager,
    sprayer,
    link_monitor,
    reorder,
    spine,
    leaf,
    mac,
    regs,
    stream_blocks,
    container_framing,
    control_demux,
    pause_gate,
    pause_fifo,
    ecmp_selector,
    link,
    traffic_check,
    traffic_gen,
)
