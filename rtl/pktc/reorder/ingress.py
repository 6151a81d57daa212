"""Ingress decision of the reorder buffer: each frame's fate, and the slot claims.

Interface
---------
* ``s_req`` (in): a frame's header fields (``header.FrameHeader``).
* ``exp`` (in, per source, 16 bits): the next ``seq`` due (window base).
* ``s_rel``, ``s_mnt`` (in): releases and head skips/jumps taking effect this clock.
* ``m_dec`` (out, registered): the decision of each frame, in frame order.
* ``m_ahead`` (out, registered): a FIRST frame dropped as out of window.
* ``m_proof`` (out, registered; only with ``skip_distance`` D > 0): a FIRST frame in
  the window and D or more ahead of the next due (stored, or a copy): evidence that
  the head is lost unless it is closed.
* ``used``, ``gen``, ``closed`` (out, per slot): slot claimed; claim generation; the
  container's LAST accepted.
* ``busy`` (out, per source): a frame of the source is in this pipeline (the head
  scheduler then leaves its head alone).
* ``drop_other``, ``drop_dup``, ``drop_window``, ``drop_orphan``, ``drop_runt``
  (out): registered pulses, one per frame dropped for that reason.

Decision, with d = ``seq`` - next due (mod 2^16): not the GSE EtherType / v1 DATA /
a known source: other; d >= 2^15: duplicate (already delivered or skipped);
W <= d < 2^15: out of window; a FIRST frame claims the free slot ``seq mod W``;
a later frame of a claimed, still open container is appended; a FIRST frame for a
claimed slot, or any frame once the container's LAST was accepted (``closed``), is a
duplicate; a non-FIRST frame for a free slot is an orphan.

Timing: two stages after the request. Stage 1 tests the window (d < W and
d - 1 < W by equality compares, per source in parallel; the sign of d and d - 1 by
subtraction) and reads the slot's state; stage 2 decides from registered flags: it takes
d - 1 when the source's base advanced in stage 1's clock, forwards the previous
frame's claim (frames can be decided on consecutive clocks at wide data), and
updates the slot state, visible to the next decision. A window jump in stage 1's
clock makes the frame out of window. The decision leaves a clock after stage 2.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .records import (
    ahead_layout,
    decision_layout,
    maintenance_layout,
    proof_layout,
    release_layout,
    request_layout,
    strobe,
)

__all__ = ["IngressDecision"]

REASONS = ("drop_other", "drop_dup", "drop_window", "drop_orphan", "drop_runt")


class IngressDecision(wiring.Component):
    def __init__(self, geo):
        self.geo = geo
        super().__init__(
            {
                "s_req": In(strobe(request_layout(geo))),
                "exp": In(16).array(geo.sources),
                "s_rel": In(strobe(release_layout(geo))),
                "s_mnt": In(strobe(maintenance_layout(geo))),
                "m_dec": Out(strobe(decision_layout(geo))),
                "m_ahead": Out(strobe(ahead_layout(geo))),
                "m_proof": Out(strobe(proof_layout(geo))),
                "used": Out(geo.nslots),
                "closed": Out(geo.nslots),
                "gen": Out(geo.nslots),
                "busy": Out(geo.sources),
                **{n: Out(1) for n in REASONS},
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        wb = g.win_bits
        req, v1 = self.s_req.payload, self.s_req.valid
        rel, mnt = self.s_rel, self.s_mnt
        closed = self.closed
        D = g.skip_distance

        # ---- stage 1: window distance, slot state -----------------------------------
        exp_s = Signal(16)
        m.d.comb += exp_s.eq(Cat(*self.exp).word_select(req.src, 16) if g.sources > 1 else self.exp[0])
        d, e = Signal(16), Signal(16)
        m.d.comb += [d.eq(req.seq - exp_s), e.eq(req.seq + ~exp_s)]  # e = d - 1
        # "in the window" (d < W, and d - 1 < W) by equality, per source in parallel:
        # with seq = q*W + r and next = qn*W + rn, seq - next < W iff q == qn when
        # r >= rn, else q - 1 == qn (no subtraction on this path).
        win_a, win_b = Signal(g.sources), Signal(g.sources)
        for s in range(g.sources):
            qn, rn = self.exp[s][wb:], self.exp[s][:wb]
            ge_a = (req.seq[:wb] >= rn) if wb else 1
            ge_b = (req.sm1[:wb] >= rn) if wb else 1
            m.d.comb += [
                win_a[s].eq(Mux(ge_a, req.seq[wb:] == qn, req.qm1 == qn)),
                win_b[s].eq(Mux(ge_b, req.sm1[wb:] == qn, req.sm1_qm1 == qn)),
            ]
        slot1 = Signal(g.slot_index_bits)
        m.d.comb += slot1.eq(g.slot(req.src, req.seq))
        mnt_skip = mnt.valid & ~mnt.payload.jump
        freeing = (rel.valid & (rel.payload.slot == slot1)) | (mnt_skip & (mnt.payload.slot == slot1))

        v2, runt2, ok2, first2, last2 = (Signal(name=f"{n}2") for n in ("v", "runt", "ok", "first", "last"))
        src2, seq2, slot2 = Signal(g.src_bits), Signal(16), Signal(g.slot_index_bits)
        in_a, in_b, beh_a, beh_b, chg2, jump2, u2, c2, g2, same2 = (
            Signal(name=n)
            for n in ("in_a", "in_b", "beh_a", "beh_b", "chg2", "jump2", "u2", "c2", "g2", "same2")
        )
        claim, close = Signal(), Signal()
        # registered ahead for the slot state's update (few inputs into ``closed``):
        # a good-so-far LAST frame (window aside), and the slot one-hot
        jump1 = mnt.valid & mnt.payload.jump & (mnt.payload.src == req.src)
        lastok2, here2 = Signal(), Signal(g.nslots)
        # D or more ahead (only meaningful in the window, where d = its low bits)
        far_a, far_b = Signal(), Signal()
        if D:
            m.d.sync += [far_a.eq(d[:wb] >= D), far_b.eq(e[:wb] >= D)]
        m.d.sync += [
            v2.eq(v1),
            runt2.eq(req.runt),
            ok2.eq(req.ok),
            first2.eq(req.first),
            last2.eq(req.last),
            src2.eq(req.src),
            seq2.eq(req.seq),
            slot2.eq(slot1),
            in_a.eq(win_a.bit_select(req.src, 1) if g.sources > 1 else win_a[0]),
            in_b.eq(win_b.bit_select(req.src, 1) if g.sources > 1 else win_b[0]),
            beh_a.eq(d[15]),
            beh_b.eq(e[15]),
            chg2.eq((rel.valid & (rel.payload.src == req.src)) | (mnt_skip & (mnt.payload.src == req.src))),
            jump2.eq(jump1),
            lastok2.eq(v1 & ~req.runt & req.ok & req.last & ~jump1),
            here2.eq(Cat(slot1 == i for i in range(g.nslots))),
            u2.eq(self.used.bit_select(slot1, 1) & ~freeing),
            c2.eq(closed.bit_select(slot1, 1) & ~freeing),
            g2.eq(self.gen.bit_select(slot1, 1)),
            # the frame in stage 2 now may claim or close this slot at the end of this clock
            same2.eq(v2 & (slot2 == slot1) & ~freeing),
        ]

        # ---- stage 2: decision, slot state update -----------------------------------
        # the claim and close of the frame decided last clock (the claim is the decision
        # register's own bit)
        p_claim, p_close = self.m_dec.payload.claim, Signal()
        m.d.sync += p_close.eq(close)
        in_win = Mux(chg2, in_b, in_a) & ~jump2
        behind = Mux(chg2, beh_b, beh_a)
        u_eff = u2 | (same2 & p_claim)
        c_eff = c2 | (same2 & p_close)
        gen_now = g2 ^ (same2 & p_claim)
        good = Signal()
        accept = Signal()
        m.d.comb += [
            good.eq(v2 & ~runt2 & ok2 & in_win),
            accept.eq(good & Mux(u_eff, ~first2 & ~c_eff, first2)),
            claim.eq(good & ~u_eff & first2),
            # = accept & last2
            close.eq(lastok2 & Mux(chg2, in_b, in_a) & Mux(u_eff, ~first2 & ~c_eff, first2)),
        ]
        outwin = v2 & ~runt2 & ok2 & ~in_win
        m.d.sync += [
            self.drop_other.eq(v2 & ~runt2 & ~ok2),
            self.drop_runt.eq(v2 & runt2),
            self.drop_dup.eq((outwin & behind & ~jump2) | (good & u_eff & (first2 | c_eff))),
            self.drop_window.eq(outwin & (~behind | jump2)),
            self.drop_orphan.eq(good & ~u_eff & ~first2),
            self.m_ahead.valid.eq(outwin & ~behind & ~jump2 & first2),
        ]
        if D:
            far = Mux(chg2, far_b, far_a)
            m.d.sync += [self.m_proof.valid.eq(good & first2 & far), self.m_proof.payload.src.eq(src2)]
        with m.If(outwin & ~behind & ~jump2 & first2):
            m.d.sync += [self.m_ahead.payload.src.eq(src2), self.m_ahead.payload.seq.eq(seq2)]
        dec = self.m_dec.payload
        m.d.sync += [
            self.m_dec.valid.eq(v2),
            dec.accept.eq(accept),
            dec.claim.eq(claim),
            dec.last.eq(last2),
            dec.gen.eq(Mux(claim, ~g2, gen_now)),
            dec.slot.eq(slot2),
        ]
        free = Signal(g.nslots)
        for i in range(g.nslots):
            m.d.comb += free[i].eq(
                (rel.valid & (rel.payload.slot == i)) | (mnt_skip & (mnt.payload.slot == i))
            )
            here = here2[i]
            m.d.sync += [
                self.used[i].eq((self.used[i] | (claim & here)) & ~free[i]),
                closed[i].eq((closed[i] | (close & here)) & ~free[i]),
                self.gen[i].eq(self.gen[i] ^ (claim & here)),
            ]

        # sources with a frame in stage 1, stage 2 or the decision register
        v3, src3 = Signal(), Signal(g.src_bits)
        m.d.sync += [v3.eq(v2), src3.eq(src2)]
        for s in range(g.sources):
            m.d.comb += self.busy[s].eq((v1 & (req.src == s)) | (v2 & (src2 == s)) | (v3 & (src3 == s)))
        return m
