"""Head scheduler of the reorder buffer: per source, the next ``seq`` due, the containers
handed to the slot reader, and the timeout that skips a missing head.

Interface
---------
* ``used``, ``done`` (in, per slot): claimed; LAST written (``ingress``, ``writer``).
* ``busy`` (in, per source): a frame of the source is being decided (``ingress``).
* ``closed`` (in, per slot): the container's LAST accepted (``ingress``).
* ``s_ahead`` (in): a FIRST frame dropped as out of window (evidence of loss).
* ``s_proof`` (in): a FIRST frame ``skip_distance`` or more ahead (``ingress``).
* ``s_rel`` (in): a container released by the reader (the source advances by one).
* ``job_room`` (in): the reader can take a job this clock.
* ``exp`` (out, per source): the next ``seq`` due (the window base).
* ``m_job`` (out, registered): a complete container to deliver, per source in
  ``seq`` order; round-robin over the sources that have one.
* ``m_mnt`` (out, registered): a head skipped after the timeout, or a window jump.

Behaviour
---------
* Per source, ``sp`` is the next slot to hand out, ``nsched`` the containers handed
  out and not yet released (at most ``jobs``). A source is a candidate when the
  container at ``sp`` is done; the candidate bits are registered, and a source picked
  or changed in one clock is not picked in the next (its registered bit is then
  stale): one source can have a container picked every other clock, several sources
  every clock.
* Timer: while a source has nothing handed out, its head is not done and something
  of it is stored (or the "ahead" evidence is set), the timer counts; at ``timeout``
  one of the two actions below follows, at the source's next turn of a round-robin
  token (one source per clock, so within ``sources`` clocks) and only while no frame
  of the source is being decided.
  - skip: the head is counted lost and its slot freed; if the next head's slot is
    empty too the timer stays expired (the container that started it is the
    evidence for the whole run of missing ones);
  - jump: nothing stored and the source was seen ahead of its window: the window
    base jumps to the last such ``seq``, every ``seq`` skipped over counted lost.
* Overrun skip (``skip_distance`` D > 0): a ``proof`` (a FIRST frame D or more
  ahead of the next due) sets the source's "proven" flag, unless the source's head
  moved in that clock or the one before (the proof may then be about the old head:
  it is dropped, a later frame brings it again). While proven and the head is not
  closed (missing, or partial: cut), the head is skipped as by the timer, at the
  source's next token turn, counted in ``lost`` and flagged ``overrun``; a skip
  proven so never chains (the next head waits for its own proof or the timer) and
  never jumps. Sound when no source has more than D containers in flight to this
  buffer that have not been delivered: container ``exp + D`` then cannot have been
  sent unless ``exp`` is gone (docs/pktc.md).
* Any release, skip or jump of a source clears its "ahead" and "proven" evidence (new
  frames set it again).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...lib.round_robin import next_in_turn
from .records import ahead_layout, job_layout, maintenance_layout, proof_layout, release_layout, strobe

__all__ = ["HeadScheduler"]


class HeadScheduler(wiring.Component):
    def __init__(self, geo):
        self.geo = geo
        super().__init__(
            {
                "used": In(geo.nslots),
                "done": In(geo.nslots),
                "closed": In(geo.nslots),
                "busy": In(geo.sources),
                "s_ahead": In(strobe(ahead_layout(geo))),
                "s_proof": In(strobe(proof_layout(geo))),
                "s_rel": In(strobe(release_layout(geo))),
                "job_room": In(1),
                "exp": Out(16).array(geo.sources),
                "m_job": Out(strobe(job_layout(geo))),
                "m_mnt": Out(strobe(maintenance_layout(geo))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        N, W, wb, T = g.sources, g.window, g.win_bits, g.timeout
        rel, mnt, ahd, prf = self.s_rel, self.m_mnt, self.s_ahead, self.s_proof
        D = g.skip_distance
        mp = mnt.payload
        exp = self.exp
        sp = [Signal(max(1, wb), name=f"sp{s}") for s in range(N)]
        nsched = [Signal(range(g.jobs + 1), name=f"nsched{s}") for s in range(N)]
        cand = Signal(N)  # registered candidate bits
        hdone, any_used, nxt_used = Signal(N), Signal(N), Signal(N)
        chg = Signal(N)  # picked or changed last clock
        expired = Signal(N)
        proven, hclosed = Signal(N), Signal(N)  # overrun evidence; head closed
        ahead = Signal(N)
        ahead_seq = [Signal(16, name=f"ahead_seq{s}") for s in range(N)]
        act_rel = Signal(N)
        act_mnt = Signal(N)
        picked = Signal(N)

        # ---- pick: round-robin among candidates, after the last source picked -----------
        rr = Signal(g.src_bits)
        eligible = Signal(N)
        m.d.comb += eligible.eq(cand & ~act_mnt & ~chg)
        pick, pick_ok = next_in_turn(m, eligible, rr)
        go = pick_ok & self.job_room
        sp_sel = Cat(*sp).word_select(pick, len(sp[0])) if N > 1 else sp[0]
        m.d.sync += [
            self.m_job.valid.eq(go),
            self.m_job.payload.src.eq(pick),
            self.m_job.payload.slot.eq(g.slot(pick, sp_sel)),
        ]
        with m.If(go):
            m.d.sync += rr.eq(pick)

        # ---- per source state ------------------------------------------------------------
        for s in range(N):
            m.d.comb += [
                act_rel[s].eq(rel.valid & (rel.payload.src == s)),
                act_mnt[s].eq(mnt.valid & (mp.src == s)),
                picked[s].eq(go & (pick == s)),
            ]
            lo = s * W
            hslot = g.slot(s, exp[s])
            # (a source picked or maintained this clock is not eligible in the next:
            # ``chg``; so the candidate bit needs neither, and stays off the pick)
            m.d.sync += [
                cand[s].eq(self.done.bit_select(g.slot(s, sp[s]), 1) & (nsched[s] < g.jobs)),
                hdone[s].eq(self.done.bit_select(hslot, 1)),
                any_used[s].eq(self.used[lo : lo + W].any()),
                nxt_used[s].eq(self.used.bit_select(g.slot(s, exp[s] + 1), 1)),
                chg[s].eq(act_rel[s] | act_mnt[s] | picked[s]),
                nsched[s].eq(nsched[s] + picked[s] - act_rel[s]),
            ]
            with m.If(act_mnt[s] & mp.jump):
                m.d.sync += [exp[s].eq(mp.seq), sp[s].eq(mp.seq[: max(1, wb)] if wb else 0)]
            with m.Elif(act_mnt[s] | act_rel[s]):
                m.d.sync += exp[s].eq(exp[s] + 1)
            with m.If(act_mnt[s] & ~mp.jump):
                m.d.sync += sp[s].eq(sp[s] + 1)
            with m.Elif(picked[s]):
                m.d.sync += sp[s].eq(sp[s] + 1)
            if D:
                m.d.sync += hclosed[s].eq(self.closed.bit_select(hslot, 1))
                with m.If(act_rel[s] | act_mnt[s]):
                    m.d.sync += proven[s].eq(0)
                with m.Elif(prf.valid & (prf.payload.src == s) & ~chg[s]):
                    m.d.sync += proven[s].eq(1)
            with m.If(ahd.valid & (ahd.payload.src == s)):
                m.d.sync += [ahead[s].eq(1), ahead_seq[s].eq(ahd.payload.seq)]
            with m.Elif(act_rel[s] | act_mnt[s]):
                m.d.sync += ahead[s].eq(0)
            # timer
            tmr = Signal(range(T + 1), name=f"tmr{s}")
            waiting = (any_used[s] | ahead[s]) & ~hdone[s] & (nsched[s] == 0)
            with m.If((act_mnt[s] & (mp.jump | ~mp.keep)) | act_rel[s]):
                m.d.sync += tmr.eq(0)
            with m.Elif(act_mnt[s] | chg[s]):
                pass
            with m.Elif(waiting):
                with m.If(tmr != T):
                    m.d.sync += tmr.eq(tmr + 1)
            with m.Else():
                m.d.sync += tmr.eq(0)
            m.d.sync += expired[s].eq(tmr == T)

        # ---- maintenance: one source per clock (round-robin token) -------------------------
        tok = Signal(g.src_bits)
        m.d.sync += tok.eq(Mux(tok == N - 1, 0, tok + 1))
        ready = Signal(N)
        for s in range(N):
            m.d.comb += ready[s].eq(
                (expired[s] | (proven[s] & ~hclosed[s]))
                & ~hdone[s]
                & (nsched[s] == 0)
                & ~chg[s]
                & ~act_mnt[s]
                & ~self.busy[s]
            )
        t_exp = Cat(*exp).word_select(tok, 16) if N > 1 else exp[0]
        t_aseq = Cat(*ahead_seq).word_select(tok, 16) if N > 1 else ahead_seq[0]
        t_exp_d = expired.bit_select(tok, 1)
        t_jump = ahead.bit_select(tok, 1) & ~any_used.bit_select(tok, 1)
        if D:  # a skip proven by an overrun never jumps
            t_jump = t_jump & t_exp_d
        m.d.sync += [
            mnt.valid.eq(ready.bit_select(tok, 1) & ~mnt.valid),
            mp.src.eq(tok),
            mp.slot.eq(g.slot(tok, t_exp)),
            mp.jump.eq(t_jump),
            mp.keep.eq(~nxt_used.bit_select(tok, 1)),
            mp.overrun.eq(~t_exp_d),
            mp.seq.eq(t_aseq),
            mp.lost.eq(Mux(t_jump, t_aseq - t_exp, 1)),
        ]
        return m
