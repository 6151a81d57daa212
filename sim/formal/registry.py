"""The registry of formal properties: what ``gse formal`` runs and lists.

Each :class:`Property` names the block, what it asserts, the assumptions it makes, its
mode and depth, and how to build its wrapper: an Elaboratable with
``Assert``/``Assume``/``Cover`` statements from ``amaranth.hdl`` around the block (the
wrappers live beside this file, one module per block; the gateware under ``rtl/`` does
not know about them).

Modes: ``bmc`` (bounded model check: the assertions hold in the first ``depth`` clocks
after reset, for every input sequence), ``prove`` (k-induction with k = ``depth``: they
hold in every reachable state, unbounded), ``cover`` (a reachability check that keeps
the bounded ones from being vacuous). ``fast`` properties run in the regression
(tests/formal/) and in a plain ``gse formal``; the others with ``gse formal --all``.
``bounded_why`` says why a ``bmc`` property is not proved unbounded.
"""

from dataclasses import dataclass, field

from amaranth.hdl import Value
from amaranth.lib.wiring import In

from .runner import prove

__all__ = ["Property", "PROPERTIES", "register", "register_reach", "run_property", "inputs_of"]


@dataclass
class Property:
    name: str
    block: str
    asserts: str
    assumptions: str
    mode: str
    depth: int
    build: object  # () -> (wrapper, ports)
    options: dict = field(default_factory=dict)  # engine / script for prove()
    fast: bool = True
    bounded_why: str = ""

    def summary(self):
        return {
            "name": self.name,
            "block": self.block,
            "mode": self.mode,
            "depth": self.depth,
            "fast": self.fast,
            "asserts": self.asserts,
            "assumptions": self.assumptions,
            "bounded_why": self.bounded_why,
        }


PROPERTIES = {}


def register(prop):
    if prop.name in PROPERTIES:
        raise ValueError(f"property {prop.name!r} registered twice")
    if prop.mode not in ("bmc", "prove", "cover"):
        raise ValueError(f"property {prop.name!r}: mode {prop.mode!r}")
    PROPERTIES[prop.name] = prop
    return prop


def inputs_of(block):
    """The block's input signals (free for the solver); logic reaching no assertion is
    then removed by Yosys, which keeps the problem small."""
    return [Value.cast(sig) for _path, member, sig in block.signature.flatten(block) if member.flow == In]


def run_property(prop, workdir, *, depth=None, timeout=None):
    """Run one property; returns :class:`~opengse.sim.formal.FormalResult` (no raise)."""
    top, ports = prop.build()
    return prove(
        top,
        ports=ports,
        depth=depth or prop.depth,
        mode=prop.mode,
        workdir=workdir,
        timeout=timeout,
        check=False,
        **prop.options,
    )


def register_reach(prop, reaches, depth=None):
    """Register ``<name>_reach``: the cover check of ``prop``'s wrapper (its ``build``
    called with ``cover=True`` adds ``Cover`` statements on the events the assertions
    are about), so that a bounded property is shown not to be vacuous at its depth."""
    return register(
        Property(
            name=f"{prop.name}_reach",
            block=prop.block,
            asserts=f"cover: {reaches} within {depth or prop.depth} clocks (so {prop.name} is not vacuous)",
            assumptions=prop.assumptions,
            mode="cover",
            depth=depth or prop.depth,
            build=lambda: prop.build(cover=True),
            options=prop.options,
            fast=False,
        )
    )
