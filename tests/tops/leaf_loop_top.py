"""Test-only top: one GSELeaf whose uplinks are looped back to its own fabric ports.

Uplink u's transmit side (``m_axis_fab_<u>``) enters a delay line of ``delay`` clocks
that never back-pressures and comes back on ``s_axis_fab_<u>``; the leaf's
``fab_pause_<u>`` returns on ``fab_pause_in_<u>`` through the same delay. So host p
reaches host q of the same leaf through the whole path: REQUEST out and back in,
GRANT out and back in, container sprayed over the uplinks, reorder, untag. PROBEs come
back as the far end's keep-alives.

Every other port of the leaf is a port of this top, under the same name.
Not a product block: built by the test runner from :data:`SPEC`.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.config import GSEConfig
from opengse.rtl.tops.leaf import GSELeaf

__all__ = ["LeafLoopTop", "SPEC"]

FABRIC_PORTS = ("s_axis_fab", "m_axis_fab", "fab_pause", "fab_pause_in")


def _delay(m, name, src_sig, dst, n):
    """``dst`` = ``src_sig`` ``n`` clocks later (a chain of registers)."""
    prev = src_sig
    for k in range(n):
        r = Signal.like(src_sig, name=f"{name}_d{k}")
        m.d.sync += r.eq(prev)
        prev = r
    m.d.comb += dst.eq(prev)


class LeafLoopTop(wiring.Component):
    def __init__(self, leaf, delay):
        self.leaf, self.delay = leaf, delay
        members = {n: mb for n, mb in leaf.signature.members.items() if n not in FABRIC_PORTS}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.leaf = leaf = self.leaf
        for name, member in self.signature.members.items():
            ours, theirs = getattr(self, name), getattr(leaf, name)
            if member.is_signature:
                pairs = zip(ours, theirs) if member.dimensions else [(ours, theirs)]
                for a, b in pairs:
                    if member.flow == In:
                        wiring.connect(m, wiring.flipped(a), b)
                    else:
                        wiring.connect(m, b, wiring.flipped(a))
            else:
                pairs = zip(ours, theirs) if member.dimensions else [(ours, theirs)]
                for a, b in pairs:
                    m.d.comb += b.eq(a) if member.flow == In else a.eq(b)
        for u in range(leaf.config.uplinks):
            tx, rx = leaf.m_axis_fab[u], leaf.s_axis_fab[u]
            m.d.comb += tx.ready.eq(1)
            beat = Signal(len(tx.payload.as_value()) + 1, name=f"link{u}_in")
            out = Signal.like(beat, name=f"link{u}_out")
            m.d.comb += beat.eq(tx.payload.as_value() | (tx.valid << len(tx.payload.as_value())))
            _delay(m, f"link{u}", beat, out, self.delay)
            m.d.comb += [rx.payload.eq(out[:-1]), rx.valid.eq(out[-1])]
            _delay(m, f"pause{u}", leaf.fab_pause[u], leaf.fab_pause_in[u], self.delay)
        return m


def _build(delay=8, nodes=4, lb=0, hosts=4, uplinks=4, **kw):
    cfg = GSEConfig(
        host_ports=hosts,
        uplinks=uplinks,
        nodes=nodes,
        queues=16,
        voq_buffer_bytes=16384,
        egress_buffer_bytes=8192,
        reorder_window=4,
        max_inflight=2,
        container_bytes=2048,
    )
    leaf = GSELeaf(cfg, lb=("gse", "ecmp")[lb], delay=delay, **kw)
    return LeafLoopTop(leaf, delay)


SPEC = BlockSpec(
    name="leaf_loop_tb",
    module="gse_leaf_loop_tb",
    factory=_build,
    params={
        "lb": 0,
        "hosts": 4,
        "uplinks": 4,
        "delay": 8,
        "nodes": 4,
        "host_store_bytes": 8192,
        "fab_store_bytes": 8192,
        "max_frame_bytes": 1536,
        "slot_bytes": 4096,
        "reorder_timeout": 2048,
        "probe_interval": 256,
        "refresh_cycles": 2048,
        "idle_cycles": 4096,
        "lease_cycles": 4096,
        "n_req": 16,
    },
    description="test-only: a GSE leaf (default 4 x 4), uplinks looped back through delay lines",
)
