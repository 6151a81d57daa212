"""Control-frame encoder -> decoder round trip: every REQUEST/GRANT header comes back.

The wrapper connects a :class:`ControlFrameEncoder` to a :class:`ControlFrameDecoder`
(no FIFO between: the decoder's ``tready`` back-pressures the encoder) and keeps, in a
:class:`ShadowQueue`, every header the encoder took whose ``type`` is REQUEST or GRANT
and whose ``ttl`` is not 0. Each header the decoder hands out must be the next one
expected, field for field; the others (DATA, PROBE, reserved types, ``ttl`` 0) must not
come out. Headers, MAC addresses, idle clocks and ``m_ctl_ready`` are free.

128-bit (:data:`DATA_WIDTH`): a control frame is 4 beats, so depth 14 sees two whole
round trips and a third frame on the way (at 64 bits, 8 beats a frame, depth 24 was
still at step 17 after 2.5 minutes).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Value
from amaranth.lib import wiring

from .registry import Property, register, register_reach
from .streams import ShadowQueue

__all__ = ["ControlRoundTrip", "DATA_WIDTH"]

DATA_WIDTH = 128


class ControlRoundTrip(Elaboratable):
    def __init__(self, data_width=DATA_WIDTH, cover=False):
        self.cover = cover
        from opengse.rtl.header.control_frames import ControlFrameDecoder, ControlFrameEncoder

        self.enc = ControlFrameEncoder(data_width)
        self.dec = ControlFrameDecoder(data_width)

    def ports(self):
        e, d = self.enc, self.dec
        return [Value.cast(x) for x in (e.s_ctl.valid, e.s_ctl.payload, e.mac_da, e.mac_sa, d.m_ctl.ready)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.enc = e = self.enc
        m.submodules.dec = d = self.dec
        wiring.connect(m, e.m_axis, d.s_axis)
        m.d.comb += Assume(~ResetSignal())
        h = e.s_ctl.payload
        ctl = ((h.type == 1) | (h.type == 2)) & (h.ttl != 0)
        width = len(Value.cast(h))
        exp = ShadowQueue(m, width, 3, name="ctl_headers")
        exp.push(m, e.s_ctl.valid & e.s_ctl.ready & ctl, h)
        out = d.m_ctl.valid & d.m_ctl.ready
        exp.pop(m, out, "a header came out that was not sent as REQUEST/GRANT")
        with m.If(out):
            m.d.comb += Assert(
                Value.cast(d.m_ctl.payload) == exp.head, "decoded header differs from the one sent"
            )
        if self.cover:
            m.d.comb += Cover(out & (exp.level == 2), "a header came back, another one behind it")
        return m


def _build(cover=False):
    top = ControlRoundTrip(cover=cover)
    return top, top.ports()


ROUND_TRIP = register(
    Property(
        name="ctl_frame_round_trip",
        block="ctl_encoder+ctl_decoder",
        asserts="every REQUEST/GRANT header with ttl > 0 sent through encoder -> decoder comes "
        "back field for field, in order; DATA/PROBE/reserved types/ttl 0 never come out (128-bit)",
        assumptions="rst low after reset; headers (every field), MAC addresses, idle clocks and "
        "m_ctl_ready free",
        mode="bmc",
        depth=14,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="the decoder's captured header bytes are not inductive relative to the "
        "encoder's beat counter; depth 14 covers two whole frames (4 beats each) and a third "
        "one started, with the decoder's output held",
    )
)
register_reach(ROUND_TRIP, "a decoded header leaves with another one in flight")
