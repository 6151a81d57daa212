"""The grant arbiter's credit gate: outstanding credit and whether a grant may issue."""

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .records import DEBT_MAX, engine_writeback, grant_writeback

__all__ = ["CreditGate"]


class CreditGate(wiring.Component):
    """Credit granted and not yet arrived (``outstanding``) against the egress room.

    A grant may issue while ``outstanding + grant_credits <= min(egress_room,
    buffer_credits)`` and the GRANT FIFO has room (``fifo_room``, from
    :class:`~.grant_output.GrantOutput`) and some class has an eligible slot
    (``class_any``, from the pick): ``dec_ok``, for the pick's decision in this
    clock; ``room_ok`` is the room part alone (for ``stat_room_stall``).

    Timing: a grant decided in clock t (``fired`` in t+1: the grant lane's stage 1) is
    counted into ``outst`` in t+2; ``outst_now`` includes it from t+1. Both are computed
    a clock ahead from registers, for "a grant last clock" and "none", and ``fired``
    selects late (releases are ignored then: the safe side). Credit released by a
    lane's write-back (``g_wb``, ``e_wb``: ``release``) is counted a clock after it,
    from registered deltas: one adder and a clamp per clock.
    """

    def __init__(self, buffer_credits, grant_credits, max_inflight, cleft_bits, n):
        self.buffer_credits, self.grant_credits = buffer_credits, grant_credits
        self.max_inflight = max_inflight
        super().__init__(
            {
                "egress_room": In(16),
                "fired": In(1),
                "class_any": In(1),
                "fifo_room": In(1),
                "g_wb": In(grant_writeback(n, grant_credits)),
                "e_wb": In(engine_writeback(n, cleft_bits)),
                "outst": Out(range(buffer_credits + 1)),
                "outst_now": Out(range(buffer_credits + grant_credits + 1)),
                "room_ok": Out(1),
                "dec_ok": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        BUF, G, K = self.buffer_credits, self.grant_credits, self.max_inflight
        fire_d = self.fired  # a grant was decided last clock
        sub = Signal(range(2 * (max(K * G, DEBT_MAX) + 1)))  # credit released this clock
        m.d.comb += sub.eq(Mux(self.g_wb.en, self.g_wb.release, 0) + Mux(self.e_wb.en, self.e_wb.release, 0))
        ok_a, ok_b = Signal(), Signal()
        outst = self.outst
        m.d.comb += self.outst_now.eq(outst + Mux(fire_d, G, 0))
        room_next = Signal(16)
        m.d.comb += room_next.eq(Mux(self.egress_room > BUF, BUF, self.egress_room))
        # room - outst once (a carry chain), then constant compares; last clock's grant
        # selects among them late.
        head = Signal(signed(17))
        m.d.comb += head.eq(room_next - outst)
        fits = {k: Signal(name=f"fits{k}") for k in (1, 2, 3)}  # outst + k*G <= room
        m.d.comb += [fits[k].eq(head >= k * G) for k in fits]
        m.d.sync += [ok_a.eq(Mux(fire_d, fits[3], fits[2])), ok_b.eq(Mux(fire_d, fits[2], fits[1]))]
        m.d.comb += self.room_ok.eq(Mux(fire_d, ok_a, ok_b))
        rel_w = len(sub) + 1
        d_fire, d_none = Signal(signed(rel_w + 1)), Signal(signed(rel_w + 1))
        m.d.sync += [d_fire.eq(G - sub), d_none.eq(-sub)]
        outst_nx = Signal(signed(len(self.outst_now) + 2))
        m.d.comb += outst_nx.eq(outst + Mux(fire_d, d_fire, d_none))
        m.d.sync += outst.eq(Mux(outst_nx < 0, 0, outst_nx))
        # The decision's enable from registers only: class, room (for "a grant last
        # clock" / "none") and FIFO, AND-ed a clock ahead.
        en_a, en_b = Signal(), Signal()
        m.d.sync += [
            en_a.eq(self.class_any & Mux(fire_d, fits[3], fits[2]) & self.fifo_room),
            en_b.eq(self.class_any & Mux(fire_d, fits[2], fits[1]) & self.fifo_room),
        ]
        m.d.comb += self.dec_ok.eq(Mux(fire_d, en_a, en_b))
        return m
