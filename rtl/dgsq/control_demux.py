"""ControlDemux: decoded control frames to the grant arbiter (REQUEST) or the DGSQ
manager (GRANT)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import GSEType
from ..interfaces import GrantInLayout, control_header, grant_in, request_record

__all__ = ["ControlDemux", "EXPORTS"]


class ControlDemux(wiring.Component):
    """Split decoded control headers by ``type``: REQUESTs and GRANTs as records.

    Interface
    ---------
    ``s_ctl`` : ``In(interfaces.control_header())``
        Header fields of control frames, from
        :class:`~opengse.rtl.header.control_frames.ControlFrameDecoder` ``m_ctl``.
    ``m_req`` : ``Out(interfaces.request_record())``
        A REQUEST for this leaf's grant arbiter (``s_req``): ``src_node``, ``dgsq``,
        ``tc``, ``tenant`` as received, ``backlog`` = the REQUEST's ``len`` (credit
        units), ``seq`` = the acknowledged GRANT seq, ``voids`` = the void-GRANT count
        (``next_type`` bits 7:0).
    ``m_grant`` : ``Out(interfaces.grant_in())``
        A GRANT for this leaf's DGSQ manager (``s_grant``): ``type``, ``src_node``
        (the granting leaf), ``port`` (its egress port), ``seq``, ``len`` (credit
        units), ``dgsq`` (our queue).
    ``stat_requests``, ``stat_grants`` : ``Out(32)``
        Headers passed on each output.
    ``stat_drop_type`` : ``Out(32)``
        Headers of any other ``type`` (DATA, PROBE, reserved), taken and dropped.

    The fields a record has no place for (``flags``, ``ttl``, and ``dst_node`` and
    ``port`` of a REQUEST, which addressed this leaf and port) are not passed on.

    Timing
    ------
    No register on the path: an output's ``valid`` is ``s_ctl.valid`` and the type
    test, ``s_ctl.ready`` is the addressed output's ``ready`` (always high for a
    dropped header). One header per clock. The counters count handshakes, one clock
    later.
    """

    def __init__(self):
        super().__init__(
            {
                "s_ctl": In(control_header()),
                "m_req": Out(request_record()),
                "m_grant": Out(grant_in()),
                "stat_requests": Out(32),
                "stat_grants": Out(32),
                "stat_drop_type": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        s, req, grant = self.s_ctl, self.m_req, self.m_grant
        h = s.payload
        is_req = h.type == GSEType.REQUEST.value
        is_grant = h.type == GSEType.GRANT.value
        m.d.comb += [
            req.valid.eq(s.valid & is_req),
            req.payload.src_node.eq(h.src_node),
            req.payload.dgsq.eq(h.dgsq),
            req.payload.tc.eq(h.tc),
            req.payload.tenant.eq(h.tenant),
            req.payload.backlog.eq(h.len),
            req.payload.seq.eq(h.seq),
            req.payload.voids.eq(h.next_type),
            grant.valid.eq(s.valid & is_grant),
        ]
        for name, _ in GrantInLayout:
            m.d.comb += grant.payload[name].eq(h[name])
        with m.If(is_req):
            m.d.comb += s.ready.eq(req.ready)
        with m.Elif(is_grant):
            m.d.comb += s.ready.eq(grant.ready)
        with m.Else():
            m.d.comb += s.ready.eq(1)
        with m.If(s.valid & s.ready):
            with m.If(is_req):
                m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
            with m.Elif(is_grant):
                m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
            with m.Else():
                m.d.sync += self.stat_drop_type.eq(self.stat_drop_type + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="control_demux",
        module="gse_control_demux",
        factory=ControlDemux,
        params={},
        description="decoded control headers to REQUEST records (grant arbiter) and GRANT "
        "records (DGSQ manager); other types dropped and counted",
    )
]
