"""The grant arbiter's lease timers: per-slot ages and the expiry candidate."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bits import onehot_first
from .records import AGE_MAX, engine_writeback, grant_writeback

__all__ = ["LeaseTimers"]


class LeaseTimers(wiring.Component):
    """Lease ages of ``n`` slots and the next slot whose lease ran out.

    A slot's age (3 bits, in ticks of ``lease_cycles // AGE_MAX`` clocks) restarts on
    progress (a grant from idle, seen at the grant lane's write-back ``g_wb``; an
    arrival or expiry, or a REQUEST that took a new slot, at the engine lane's
    ``e_wb``: ``restart``) and advances while the slot has containers in flight
    (``inflnz``), up to ``AGE_MAX``: the slot's lease ran out between 3/4 and 1 x
    ``lease_cycles`` after its last progress.

    Outputs: ``expired_r``, the live slots whose lease ran out, a clock old; the
    expiry candidate ``exp_oh`` (one-hot, ``exp_any``) among those with no operation
    in a lane (``busy``), found in two registered steps (the first such slot of each
    group of 16, then the first group). The candidate may be stale by a few clocks:
    the engine waits until its slot has no operation in a lane, and the engine lane
    checks that it is still expired.
    """

    def __init__(self, n, lease_cycles, grant_credits, cleft_bits):
        self.n, self.lease_cycles = n, lease_cycles
        super().__init__(
            {
                "valid": In(n),
                "inflnz": In(n),
                "busy": In(n),
                "g_wb": In(grant_writeback(n, grant_credits)),
                "e_wb": In(engine_writeback(n, cleft_bits)),
                "expired_r": Out(n),
                "exp_oh": Out(n),
                "exp_any": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n
        tick_period = max(1, self.lease_cycles // AGE_MAX)
        tick_cnt = Signal(range(tick_period))
        tick = Signal()  # tick_cnt == tick_period - 1
        if tick_period == 1:
            m.d.comb += tick.eq(1)
        else:
            # Registered from the count a clock ahead (the count steps by one up to
            # tick_period - 1): the same value in every clock, and no compare in front
            # of the 64 ages it enables.
            m.d.sync += tick.eq(tick_cnt == tick_period - 2)
        m.d.sync += tick_cnt.eq(Mux(tick, 0, tick_cnt + 1))
        age = [Signal(3, name=f"age{i}") for i in range(n)]
        g, e = self.g_wb, self.e_wb
        for i in range(n):
            # Lease age: restarted by progress, advanced by the lease clock while
            # containers are in flight.
            with m.If((g.en & g.oh[i] & g.idle) | (e.en & e.oh[i] & e.restart)):
                m.d.sync += age[i].eq(0)
            with m.Elif(tick & self.inflnz[i] & (age[i] != AGE_MAX)):
                m.d.sync += age[i].eq(age[i] + 1)

        expired = Signal(n)
        m.d.comb += expired.eq(Cat((age[i] == AGE_MAX) for i in range(n)) & self.inflnz & self.valid)
        expired_r = self.expired_r
        m.d.sync += expired_r.eq(expired)
        XG = 16
        xgroups = [range(g_, min(g_ + XG, n)) for g_ in range(0, n, XG)]
        xg_oh, xg_any = Signal(n), Signal(len(xgroups))
        xcand = Signal(n)
        m.d.comb += xcand.eq(expired_r & ~self.busy)
        for k, grp in enumerate(xgroups):
            v = xcand[grp.start : grp.stop]
            m.d.sync += [xg_oh[grp.start : grp.stop].eq(onehot_first(v)), xg_any[k].eq(v.any())]
        first_g = onehot_first(xg_any)
        m.d.sync += [
            self.exp_oh.eq(
                Cat(Mux(first_g[k], xg_oh[grp.start : grp.stop], 0) for k, grp in enumerate(xgroups))
            ),
            self.exp_any.eq(xg_any.any()),
        ]
        return m
