"""The grant arbiter's arrival accumulator: reports of one container added up."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .records import arrival_layout

__all__ = ["ArrivalAccumulator"]


class ArrivalAccumulator(wiring.Component):
    """Arrival reports (``s_arr``) to the engine (``m_arr``), merged per container.

    Reports of the same queue's container are added up while the engine is busy
    (their effect is the same as one report of the sum), so one report per packet
    costs no more engine time than one per container.

    A report is registered first, with whether its queue is that of the report before
    it (compared as it is registered): reports pass in order, so that is the queue
    the accumulator holds, and merging needs no key compare. It merges into the
    accumulator (one entry, ``m_arr``) unless the accumulator holds a container's
    ``last`` or either count has its top bit set (the sum fits 16 bits). A report for
    another queue waits until the accumulator was taken, and none is merged while the
    engine's accept stage is free (``engine_busy`` low: it may take the accumulator
    this clock), so the engine's choice, which is late, enables no accumulator
    register but its valid bit.

    Timing: ``s_arr.ready`` while the input register is empty or moves on; a report
    reaches ``m_arr`` 2 clocks after its transfer at the earliest.
    """

    def __init__(self):
        super().__init__(
            {
                "s_arr": In(stream.Signature(arrival_layout())),
                "m_arr": Out(stream.Signature(arrival_layout())),
                "engine_busy": In(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        in_v, in_same = Signal(), Signal()
        in_a = Signal(arrival_layout())
        last_key = Signal(32)
        in_go = Signal()
        acc_v = self.m_arr.valid
        acc = self.m_arr.payload
        acc_take = Signal()
        m.d.comb += acc_take.eq(self.m_arr.ready)
        new = self.s_arr.payload
        m.d.comb += self.s_arr.ready.eq(~in_v | in_go)
        with m.If(self.s_arr.valid & self.s_arr.ready):
            m.d.sync += [
                in_v.eq(1),
                in_a.eq(new),
                last_key.eq(Cat(new.src_node, new.dgsq)),
                in_same.eq(Cat(new.src_node, new.dgsq) == last_key),
            ]
        with m.Elif(in_go):
            m.d.sync += in_v.eq(0)
        merge = Signal()
        m.d.comb += merge.eq(acc_v & ~acc.last & in_same & ~acc.credits[15] & ~in_a.credits[15])
        m.d.comb += in_go.eq(in_v & (~acc_v | (merge & self.engine_busy)))
        with m.If(in_go):
            with m.If(merge):
                m.d.sync += [acc.credits.eq(acc.credits + in_a.credits), acc.last.eq(in_a.last)]
            with m.Else():
                m.d.sync += [acc.eq(in_a), acc_v.eq(1)]
        with m.Elif(acc_take):
            m.d.sync += acc_v.eq(0)
        return m
