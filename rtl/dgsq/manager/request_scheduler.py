"""RequestScheduler: which context the DGSQ manager's engine looks at when no input waits."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

__all__ = ["RequestScheduler"]


class RequestScheduler(wiring.Component):
    """The REQUEST FIFO, the pending-REQUEST bits, the timer sweep and the coarse clock.

    Interface: ``ctl_due`` (a REQUEST waits in the FIFO or a sweep step is due),
    ``ctl_sweep`` (the next control event is a sweep step: one is due, or the FIFO is
    empty) and ``ctl_q`` (its context: the sweep pointer, or the FIFO's head) out;
    ``ctl_take`` (the engine's ACCEPT takes that event) in: it pops the FIFO, or clears
    the due sweep step and advances the sweep pointer (wrapping at ``n_ctx``). From the
    engine, one clock after its WRITE: ``set_pend`` (a REQUEST becomes due for context
    ``q``: its ``pending`` bit is set, ``q`` pushed), ``clr_pend`` (REQUEST done:
    ``pending`` bit of one-hot ``qoh`` cleared). ``pending`` has a bit per context;
    ``now`` is the coarse time (clock count >> ``tick_shift``, 16 bits, wrapping).

    Timing: all registered; a push is visible at the FIFO's output after its latency
    (:class:`~amaranth.lib.fifo.SyncFIFOBuffered`, ``n_ctx`` deep: a context is in it at
    most once, so it never overflows). A sweep step becomes due every 32 clocks, so
    under continuous packets the sweep still gets one event per 32 clocks (a pass over
    64 contexts per ~2048 clocks, well below the refresh time); an idle engine sweeps
    on every event.
    """

    def __init__(self, n_ctx, tick_shift):
        self.n_ctx = n_ctx
        self.tick_shift = tick_shift
        qb = max(1, (n_ctx - 1).bit_length())
        super().__init__(
            {
                "ctl_due": Out(1),
                "ctl_sweep": Out(1),
                "ctl_q": Out(qb),
                "ctl_take": In(1),
                "set_pend": In(1),
                "clr_pend": In(1),
                "q": In(qb),
                "qoh": In(n_ctx),
                "pending": Out(n_ctx),
                "now": Out(16),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        qb = len(self.q)
        pending = self.pending  # a REQUEST is due: id in req_fifo once

        tick_cnt = Signal(self.tick_shift + 1)
        m.d.sync += tick_cnt.eq(tick_cnt + 1)
        with m.If(tick_cnt[: self.tick_shift].all() if self.tick_shift else 1):
            m.d.sync += self.now.eq(self.now + 1)

        m.submodules.req_fifo = req_fifo = SyncFIFOBuffered(width=qb, depth=n)
        sweep = Signal(qb)
        sweep_cnt = Signal(5)
        sweep_due = Signal()
        m.d.sync += sweep_cnt.eq(sweep_cnt + 1)
        with m.If(sweep_cnt.all()):
            m.d.sync += sweep_due.eq(1)
        m.d.comb += [
            self.ctl_due.eq(req_fifo.r_rdy | sweep_due),
            self.ctl_sweep.eq(sweep_due | ~req_fifo.r_rdy),
            self.ctl_q.eq(Mux(self.ctl_sweep, sweep, req_fifo.r_data)),
        ]
        with m.If(self.ctl_take):
            with m.If(self.ctl_sweep):
                m.d.sync += [sweep_due.eq(0), sweep.eq(Mux(sweep == n - 1, 0, sweep + 1))]
            with m.Else():
                m.d.comb += req_fifo.r_en.eq(1)

        with m.If(self.set_pend):
            m.d.sync += pending.eq(pending | self.qoh)
        with m.If(self.clr_pend):
            m.d.sync += pending.eq(pending & ~self.qoh)
        m.d.comb += [req_fifo.w_en.eq(self.set_pend), req_fifo.w_data.eq(self.q)]
        return m
