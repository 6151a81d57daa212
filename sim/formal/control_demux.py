"""Control demux: every decoded control header goes to exactly one place, whole.

:class:`DemuxRoutes` around rtl/dgsq/control_demux.py asserts, every clock:

* a REQUEST on offer is offered on ``m_req`` only, with ``src_node``, ``dgsq``, ``tc``,
  ``tenant``, ``backlog`` = ``len`` and ``seq`` as received, and taken when ``m_req``
  takes it;
* a GRANT on offer is offered on ``m_grant`` only, every field of the GRANT record as
  received, and taken when ``m_grant`` takes it;
* any other ``type`` (DATA, PROBE, reserved 4-15) is taken at once and offered nowhere;
* no output is valid without a header on offer (nothing out of nothing);
* each counter (``stat_requests``, ``stat_grants``, ``stat_drop_type``) grows by one (wrapping) in
  the clock after a header of its kind is taken, and only then;
* both outputs follow the valid/ready rule.

So every header taken ends in exactly one of the three places. The block has no state
but its counters, and the counters are compared one clock apart, so k-induction closes
at k = 2: the property is unbounded.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .stream_blocks import assert_stream_rules
from .streams import assume_stream_rules

__all__ = ["DemuxRoutes"]


class DemuxRoutes(Elaboratable):
    def __init__(self, cover=False, req_type=None):
        from opengse.rtl.dgsq.control_demux import ControlDemux
        from opengse.rtl.header.gse_header import GSEType

        self.dut = ControlDemux()
        self.cover = cover
        self.req_type = GSEType.REQUEST.value if req_type is None else req_type
        self.grant_type = GSEType.GRANT.value

    def elaborate(self, platform):
        from opengse.rtl.interfaces import GrantInLayout

        m = Module()
        m.submodules.dut = dut = self.dut
        s, req, grant = dut.s_ctl, dut.m_req, dut.m_grant
        h = s.payload
        m.d.comb += Assume(~ResetSignal())
        assume_stream_rules(m, s, "s_ctl")
        is_req = h.type == self.req_type
        is_grant = h.type == self.grant_type
        other = ~is_req & ~is_grant
        m.d.comb += [
            Assert(req.valid == (s.valid & is_req), "m_req valid without a REQUEST, or not with one"),
            Assert(grant.valid == (s.valid & is_grant), "m_grant valid without a GRANT, or not with one"),
        ]
        with m.If(s.valid & is_req):
            m.d.comb += Assert(s.ready == req.ready, "a REQUEST taken without m_req taking it")
        with m.If(s.valid & is_grant):
            m.d.comb += Assert(s.ready == grant.ready, "a GRANT taken without m_grant taking it")
        with m.If(s.valid & other):
            m.d.comb += Assert(s.ready, "a header of another type not taken (stalls the decoder)")
        with m.If(req.valid):
            p = req.payload
            for got, want, name in (
                (p.src_node, h.src_node, "src_node"),
                (p.dgsq, h.dgsq, "dgsq"),
                (p.tc, h.tc, "tc"),
                (p.tenant, h.tenant, "tenant"),
                (p.backlog, h.len, "backlog"),
                (p.seq, h.seq, "seq"),
            ):
                m.d.comb += Assert(got == want, f"m_req: {name} not as received")
        with m.If(grant.valid):
            for name, _ in GrantInLayout:
                m.d.comb += Assert(grant.payload[name] == h[name], f"m_grant: {name} not as received")

        fire = s.valid & s.ready
        started = Signal(name="started")
        m.d.sync += started.eq(1)
        for stat, kind in (
            (dut.stat_requests, is_req),
            (dut.stat_grants, is_grant),
            (dut.stat_drop_type, other),
        ):
            prev = Signal(32, name=f"{stat.name}_prev")
            took = Signal(name=f"{stat.name}_took")
            m.d.sync += [prev.eq(stat), took.eq(fire & kind)]
            with m.If(started):
                m.d.comb += Assert(stat == (prev + took)[:32], f"{stat.name} not counting its headers")
        assert_stream_rules(m, req, "m_req")
        assert_stream_rules(m, grant, "m_grant")
        if self.cover:
            m.d.comb += Cover(
                (dut.stat_requests != 0)
                & (dut.stat_grants != 0)
                & (dut.stat_drop_type != 0)
                & req.valid
                & ~req.ready
            )
        return m


def _build(cover=False):
    top = DemuxRoutes(cover=cover)
    return top, inputs_of(top.dut)


ROUTES = register(
    Property(
        name="control_demux_one_output",
        block="control_demux",
        asserts="a REQUEST goes to m_req only, a GRANT to m_grant only (fields as received, taken when the "
        "output takes it), any other type is taken and goes nowhere; nothing out of nothing; each counter "
        "+1 for each header of its kind; both outputs keep the valid/ready rule; unbounded",
        assumptions="rst low after reset; s_ctl follows the valid/ready rule; headers (every field) and both "
        "readys free",
        mode="prove",
        depth=2,
        build=_build,
        options={"engine": "smtbmc yices"},
    )
)
register_reach(ROUTES, "a REQUEST stalled at m_req after a REQUEST, a GRANT and a dropped header", depth=6)
