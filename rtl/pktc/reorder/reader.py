"""Slot reader of the reorder buffer: delivers the containers the head scheduler hands it.

Interface
---------
* ``s_job`` (in, registered by the scheduler): a container to deliver (source, slot).
* ``job_room`` (out, registered): a job may be sent this clock.
* ``fill``, ``bad`` (in, per slot): words in the slot; container to discard.
* ``r_en``, ``r_addr`` (out), ``r_data`` (in): the slot RAM's read port (``r_data`` two
  clocks after ``r_addr``).
* ``m_axis`` (out, AXI-Stream): the containers' frames; honours ``tready``.
* ``m_rel`` (out, registered): a container done with: delivered, or (``bad``)
  discarded unread.

Timing: a job's fill level and ``bad`` flag are looked up as it arrives and it waits
in a 4-entry register FIFO. The current job issues one read per clock while the
output FIFO (8 entries) has room, the last word of one job directly followed by the
first of the next: 1 beat per clock across containers. The RAM address is a register
(its low bits count the words, its high bits are the slot). Read words reach the output FIFO two
clocks after their address; the output is that FIFO's head. A bad container costs one
clock and no output.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from ...lib.register_fifo import register_fifo
from ...lib.stream import AXIStreamSignature
from .records import job_layout, release_layout, strobe

__all__ = ["SlotReader", "JOB_QUEUE", "OUT_FIFO"]

JOB_QUEUE = 4
OUT_FIFO = 8


class SlotReader(wiring.Component):
    def __init__(self, geo):
        self.geo = geo
        abits = max(1, (geo.depth - 1).bit_length())
        super().__init__(
            {
                "s_job": In(strobe(job_layout(geo))),
                "job_room": Out(1),
                "fill": In(geo.slot_bits + 1).array(geo.nslots),
                "bad": In(geo.nslots),
                "r_en": Out(1),
                "r_addr": Out(abits),
                "r_data": In(geo.word_bits),
                "m_axis": Out(AXIStreamSignature(geo.data_width)),
                "m_rel": Out(strobe(release_layout(geo))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        sb, B = g.slot_bits, g.bpb
        # ---- job queue --------------------------------------------------------------------
        qlay = data.StructLayout({"src": g.src_bits, "slot": g.slot_index_bits, "len": sb + 1, "bad": 1})
        job = self.s_job.payload
        length = Cat(*self.fill).word_select(job.slot, sb + 1)
        qin = Signal(qlay)
        m.d.comb += [
            qin.src.eq(job.src),
            qin.slot.eq(job.slot),
            qin.len.eq(length),
            qin.bad.eq(self.bad.bit_select(job.slot, 1)),
        ]
        take = Signal()
        entries, valids = register_fifo(m, "job", JOB_QUEUE, qlay, self.s_job.valid, qin, take)
        head = entries[0]
        count = sum(valids)
        # (a job picked this clock arrives next clock: leave room for it and one more)
        m.d.sync += self.job_room.eq(count + self.s_job.valid + 2 <= JOB_QUEUE)

        # ---- current job ------------------------------------------------------------------
        cur_v, cur_bad, cur_last = Signal(), Signal(), Signal()
        cur_src = Signal(g.src_bits)
        left = Signal(sb + 1)
        raddr = self.r_addr  # a register: word sb.. = slot
        ptr, cur_slot = raddr[:sb], raddr[sb:]
        room = Signal()
        issue = Signal()
        finish = Signal()
        m.d.comb += [
            issue.eq(cur_v & ~cur_bad & room),
            finish.eq(cur_v & (cur_bad | (issue & cur_last))),
            take.eq((~cur_v | finish) & valids[0]),
            self.r_en.eq(1),
        ]
        with m.If(take):
            m.d.sync += [
                cur_v.eq(1),
                cur_src.eq(head.src),
                cur_bad.eq(head.bad),
                left.eq(head.len),
                cur_last.eq(head.len == 1),
                raddr.eq(Cat(Const(0, sb), head.slot)),
            ]
        with m.Elif(finish):
            m.d.sync += cur_v.eq(0)
        with m.Elif(issue):
            m.d.sync += [left.eq(left - 1), cur_last.eq(left == 2), ptr.eq(ptr + 1)]
        rel = self.m_rel.payload
        m.d.sync += [
            self.m_rel.valid.eq(finish),
            rel.src.eq(cur_src),
            rel.slot.eq(cur_slot),
            rel.bad.eq(cur_bad),
        ]

        # ---- read pipeline and output FIFO ------------------------------------------------
        m.submodules.out = ofifo = SyncFIFO(width=g.word_bits, depth=OUT_FIFO)
        v1, v2 = Signal(), Signal()
        m.d.sync += [v1.eq(issue), v2.eq(v1)]
        m.d.comb += [ofifo.w_en.eq(v2), ofifo.w_data.eq(self.r_data)]
        # everything in the FIFO or on its way, one clock late: an issue now still fits
        m.d.sync += room.eq(ofifo.level + v1 + v2 + issue < OUT_FIFO)
        o = self.m_axis
        r_last = ofifo.r_data[g.data_width]
        r_cnt = ofifo.r_data[g.data_width + 1 :]
        keep_last = Cat(Const(1, 1), *[r_cnt >= k for k in range(1, B)])
        m.d.comb += [
            o.valid.eq(ofifo.r_rdy),
            o.payload.data.eq(ofifo.r_data[: g.data_width]),
            o.payload.last.eq(r_last),
            o.payload.keep.eq(Mux(r_last, keep_last, (1 << B) - 1)),
            o.payload.user.eq(0),
            ofifo.r_en.eq(o.ready),
        ]
        return m
