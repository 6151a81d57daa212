"""The VOQ buffer's per-cell admission check: a 5-stage pipeline, one question a clock.

:class:`VOQAdmission` decides whether the next cell of the packet being written may be
taken (docs/voq.md, Admission). The enqueue asks every clock while the current cell has
no verdict; each question carries a snapshot of the accounting state and the ``tag``
of the cell it is about (packet parity and cell index), and the enqueue uses an answer
only if its tag is still current.

Interface (all streams ``always_ready``: one entry per clock, no back-pressure):

* ``s_cell`` in: ``valid`` = a cell waits for its verdict; ``tag``, ``kk`` (cells of
  this packet already taken), ``free`` (free list length), ``deficit`` (unused
  reservations of all tenants), ``occ`` (the tenant's cells), ``pend`` (cells of a
  commit posted and not yet applied, 0 if none), ``pend_own`` (the same if that commit
  is this tenant's, else 0), ``pend_occ`` (the occupancy of that commit's tenant).
* ``queue_cells`` (signed), ``queue_cells_valid`` in, read in the cycle of stage 4
  (not pipelined): the queue's occupancy plus ``kk`` (corrected for a pending commit
  of the same queue), and whether it has been read yet; no verdict leaves stage 4
  without it.
* ``m_room`` out (stage 2, 2 cycles after the question): ``room`` = a free cell lies
  beyond this packet's cells and the free list's sentinel (so the current cell is not
  the sentinel and its link may be read).
* ``m_verdict`` out (stage 5, 5 cycles after the question): ``admit``, or the
  ``reason`` (``R_FULL``, ``R_QUEUE``, ``R_TENANT``, ``R_DT``).

Every input moves only in the safe direction while a question is in flight (frees
raise ``free`` by at least what they raise ``deficit``; the own pending commit is
subtracted explicitly), so a verdict stays valid when it arrives.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .records import R_DT, R_FULL, R_QUEUE, R_TENANT

__all__ = ["VOQAdmission", "cell_query_layout"]


def cell_query_layout(g):
    return data.StructLayout(
        {
            "tag": g.cnw + 1,
            "kk": g.cnw,
            "free": g.cnw,
            "deficit": g.dw,
            "occ": g.cnw,
            "pend": g.cnw,
            "pend_own": g.cnw,
            "pend_occ": g.cnw,
        }
    )


def _sg(x):
    return Cat(x, Const(0, 1)).as_signed()


class VOQAdmission(wiring.Component):
    def __init__(self, geometry):
        g = self.g = geometry
        tag = g.cnw + 1
        super().__init__(
            {
                "s_cell": In(stream.Signature(cell_query_layout(g), always_ready=True)),
                "queue_cells": In(signed(g.cnw + 3)),
                "queue_cells_valid": In(1),
                "m_room": Out(
                    stream.Signature(data.StructLayout({"tag": tag, "room": 1}), always_ready=True)
                ),
                "m_verdict": Out(
                    stream.Signature(
                        data.StructLayout({"tag": tag, "admit": 1, "reason": 3}), always_ready=True
                    )
                ),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.g
        R, L, QL, cnw = g.res, g.tlim, g.qlim, g.cnw
        tag_w = cnw + 1

        # S1: the snapshot.
        s1_v = Signal()
        s1 = Signal(cell_query_layout(g))
        m.d.sync += [s1_v.eq(self.s_cell.valid), s1.eq(self.s_cell.payload)]

        SW = cnw + g.dw + 4
        s2_v, s2_tag = Signal(), Signal(tag_w)
        s2_A = Signal(signed(SW))  # free cells beyond the packet's prefix and the sentinel
        s2_o, s2_ok, s2_D = Signal(signed(SW)), Signal(signed(SW)), Signal(signed(SW))
        s2_pc, s2_ocd = Signal(cnw), Signal(cnw)  # pending commit; its tenant's deficit
        m.d.sync += [
            s2_v.eq(s1_v),
            s2_tag.eq(s1.tag),
            s2_A.eq(_sg(s1.free) - _sg(s1.pend) - _sg(s1.kk) - 1),
            s2_o.eq(_sg(s1.occ) + _sg(s1.pend_own)),
            s2_ok.eq(_sg(s1.occ) + _sg(s1.pend_own) + _sg(s1.kk)),
            s2_D.eq(_sg(s1.deficit)),
            s2_pc.eq(s1.pend),
            s2_ocd.eq(Mux(s1.pend_occ < R, R - s1.pend_occ, 0)),
        ]
        m.d.comb += [
            self.m_room.valid.eq(s2_v),
            self.m_room.payload.tag.eq(s2_tag),
            self.m_room.payload.room.eq(s2_A >= 1),
        ]

        s3_v, s3_tag = Signal(), Signal(tag_w)
        s3_A, s3_ok, s3_AD, s3_own = (
            Signal(signed(SW)),
            Signal(signed(SW)),
            Signal(signed(SW)),
            Signal(signed(SW)),
        )
        s3_cons = Signal(cnw)  # reservation the pending commit consumes (not yet in D)
        m.d.sync += [
            s3_v.eq(s2_v),
            s3_tag.eq(s2_tag),
            s3_A.eq(s2_A),
            s3_ok.eq(s2_ok),
            s3_AD.eq(s2_A - s2_D),
            s3_own.eq(Mux(s2_o < R, R - s2_o, 0)),
            s3_cons.eq(Mux(s2_pc < s2_ocd, s2_pc, s2_ocd)),
        ]

        s4_v, s4_tag = Signal(), Signal(tag_w)
        s4_sf = Signal(signed(SW))  # shared-pool cells left for this cell
        s4_full, s4_res, s4_cap = Signal(), Signal(), Signal()
        m.d.sync += [
            s4_v.eq(s3_v),
            s4_tag.eq(s3_tag),
            s4_sf.eq(s3_AD + s3_own + s3_cons),
            s4_full.eq(s3_A < 1),
            s4_res.eq(s3_ok < R),
            s4_cap.eq(s3_ok >= L),
        ]

        qk = self.queue_cells
        if g.alpha_log2 >= 0:
            dt_lim = s4_sf << g.alpha_log2
        else:
            dt_lim = s4_sf >> -g.alpha_log2
        qlim = qk >= QL
        dt_bad = qk >= dt_lim
        s5_v, s5_tag, s5_pass, s5_reason = Signal(), Signal(tag_w), Signal(), Signal(3)
        m.d.sync += [s5_v.eq(s4_v & self.queue_cells_valid), s5_tag.eq(s4_tag)]
        with m.If(s4_full):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(R_FULL)]
        with m.Elif(qlim):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(R_QUEUE)]
        with m.Elif(s4_res):
            m.d.sync += [s5_pass.eq(1), s5_reason.eq(0)]
        with m.Elif(s4_cap):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(R_TENANT)]
        with m.Elif(s4_sf < 1):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(R_FULL)]
        with m.Elif(dt_bad):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(R_DT)]
        with m.Else():
            m.d.sync += [s5_pass.eq(1), s5_reason.eq(0)]
        m.d.comb += [
            self.m_verdict.valid.eq(s5_v),
            self.m_verdict.payload.tag.eq(s5_tag),
            self.m_verdict.payload.admit.eq(s5_pass),
            self.m_verdict.payload.reason.eq(s5_reason),
        ]
        return m
