"""The grant arbiter's GRANT output: an 8-entry FIFO with reservations."""

from amaranth import Module, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .records import grant_layout

__all__ = ["GrantOutput", "FIFO_DEPTH"]

FIFO_DEPTH = 8


class GrantOutput(wiring.Component):
    """GRANTs from the grant lane (``s_grant``) to ``m_grant``, through a
    ``FIFO_DEPTH``-entry FIFO (``SyncFIFOBuffered``).

    The FIFO never refuses a GRANT: the pick reserves an entry per decision
    (``reserve``: a grant was decided last clock), returned as a GRANT leaves
    ``m_grant``, and decides only while two entries are free (``fifo_room``, for the
    decision in the next clock: combinational from this clock's reservation and
    read). So ``s_grant.ready`` is always 1 when ``s_grant.valid`` and the lane does
    not look at it. A GRANT leaves 3 clocks after its decision (2 in the lane, 1 in
    the FIFO) at the earliest.
    """

    def __init__(self, slot_bits):
        super().__init__(
            {
                "s_grant": In(stream.Signature(grant_layout(slot_bits))),
                "m_grant": Out(stream.Signature(grant_layout(slot_bits))),
                "reserve": In(1),
                "fifo_room": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        out_fifo = m.submodules.out_fifo = fifo.SyncFIFOBuffered(
            width=len(self.m_grant.payload.as_value()), depth=FIFO_DEPTH
        )
        m.d.comb += [
            out_fifo.w_data.eq(self.s_grant.payload),
            out_fifo.w_en.eq(self.s_grant.valid),
            self.s_grant.ready.eq(out_fifo.w_rdy),
            self.m_grant.payload.eq(out_fifo.r_data),
            self.m_grant.valid.eq(out_fifo.r_rdy),
            out_fifo.r_en.eq(self.m_grant.ready),
        ]
        # Reservations: one per grant decided, returned as grants leave.
        fcred = Signal(range(FIFO_DEPTH + 1), init=FIFO_DEPTH)
        rd = Signal()
        m.d.comb += rd.eq(self.m_grant.valid & self.m_grant.ready)
        fcred_next = Signal(range(FIFO_DEPTH + 2))
        m.d.comb += fcred_next.eq(fcred - self.reserve + rd)
        m.d.sync += fcred.eq(fcred_next)
        m.d.comb += self.fifo_room.eq(fcred_next >= 2)
        return m
