"""GrantFraming: the grant arbiter's decisions as GRANT control headers."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import GSEType
from ..interfaces import FIELD_BITS, control_header, grant_record

__all__ = ["GrantFraming", "EXPORTS"]


class GrantFraming(wiring.Component):
    """GRANT header fields from a grant decision, for the control-frame encoder.

    Parameters
    ----------
    slot_bits : int
        Width of the arbiter's ``slot`` (its ``slot_bits``: 6 for 64 requesters).
    ttl : int
        ``ttl`` of the GRANTs (1..255).

    Interface
    ---------
    ``s_grant`` : ``In(interfaces.grant_record(slot_bits))``
        From :class:`~opengse.rtl.dgsq.arbiter.GrantArbiter` ``m_grant``.
    ``m_ctl`` : ``Out(interfaces.control_header())``
        To :class:`~opengse.rtl.header.control_frames.ControlFrameEncoder` ``s_ctl``:
        ``type`` GRANT, ``flags`` 0, ``src_node`` = ``node_id`` (this leaf),
        ``dst_node`` = the requester (the grant's ``src_node``), ``port`` = ``port``
        (the granting egress port), ``ttl`` = the parameter, and ``len`` = ``credit``
        (credit units), ``seq``, ``dgsq``, ``tc``, ``tenant`` echoed. The arbiter's
        ``slot`` stays local (it is not on the wire).
    ``node_id`` : ``In(16)``, ``port`` : ``In(8)``
        This leaf's node id and the arbiter's egress port (constants in a leaf).
    ``stat_grants`` : ``Out(32)``
        GRANT headers handed on.

    Timing
    ------
    No register on the path: ``m_ctl`` is ``s_grant`` renamed, one per clock, and
    ``s_grant.ready`` is ``m_ctl.ready``.
    """

    def __init__(self, slot_bits=6, ttl=64):
        if not isinstance(slot_bits, int) or slot_bits < 1:
            raise ValueError(f"slot_bits must be a positive integer, not {slot_bits!r}")
        if not 1 <= ttl <= 255:
            raise ValueError(f"ttl must be 1..255 (0 is dropped on arrival), not {ttl!r}")
        self.slot_bits, self.ttl = slot_bits, ttl
        super().__init__(
            {
                "s_grant": In(grant_record(slot_bits)),
                "m_ctl": Out(control_header()),
                "node_id": In(FIELD_BITS["src_node"]),
                "port": In(FIELD_BITS["port"]),
                "stat_grants": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g, c = self.s_grant, self.m_ctl
        m.d.comb += [
            c.valid.eq(g.valid),
            g.ready.eq(c.ready),
            c.payload.type.eq(GSEType.GRANT.value),
            c.payload.flags.eq(0),
            c.payload.next_type.eq(0),
            c.payload.tc.eq(g.payload.tc),
            c.payload.tenant.eq(g.payload.tenant),
            c.payload.src_node.eq(self.node_id),
            c.payload.dst_node.eq(g.payload.src_node),
            c.payload.port.eq(self.port),
            c.payload.ttl.eq(self.ttl),
            c.payload.seq.eq(g.payload.seq),
            c.payload.len.eq(g.payload.credit),
            c.payload.dgsq.eq(g.payload.dgsq),
        ]
        with m.If(c.valid & c.ready):
            m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="grant_framing",
        module="gse_grant_framing",
        factory=GrantFraming,
        params={"slot_bits": 6, "ttl": 64},
        description="grant arbiter decisions to GRANT control headers for the encoder",
    )
]
