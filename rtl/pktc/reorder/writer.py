"""Slot writer of the reorder buffer: the beats of accepted frames into their slot's words.

Interface
---------
* ``s_beat`` (in, always ready): every input beat (``tkeep`` contiguous from byte 0).
* ``s_dec`` (in): each frame's decision (``ingress.IngressDecision``), in frame order,
  a few clocks after the frame's header.
* ``used``, ``gen`` (in, per slot): the claims, to check a slot still belongs to the
  container a frame was accepted for (a timeout skip may free it meanwhile).
* ``s_rel``, ``s_mnt`` (in): frees taking effect this clock (clear ``done``/``bad``).
* ``w_en``, ``w_addr``, ``w_data`` (out, registered): the slot RAM's write port.
* ``done``, ``bad`` (out, per slot): the container's LAST frame is written; a frame
  of it had ``tuser`` set or did not fit the slot.
* ``fill`` (out, per slot): words written in the slot (saturates at the slot size).

Timing: beats wait in a FIFO (depth ``hdr_beat`` + 8) until their frame's decision
arrives in a second FIFO; both are popped into registers (stage 0). Stage 1 looks up
the slot's fill level and whether the slot still belongs to the frame's container.
Stage 2 forms the word's address: 0 for a claiming frame's first beat, else the fill
level (forwarded from the frame before when that one ended in the same slot in the
clock before), then one more per beat; it also sets ``fill``, ``done`` and ``bad`` at a
frame's last beat, the clock its last word goes to the RAM's write register:
``done`` is visible a clock before that word is in the RAM, and the slot reader
issues its first read at least three clocks after it sees ``done``. At most
``hdr_beat`` + 5 beats wait, so the FIFO never fills and the input stays ready.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .header import beat_stream
from .records import decision_layout, maintenance_layout, release_layout, strobe

__all__ = ["SlotWriter"]


class SlotWriter(wiring.Component):
    def __init__(self, geo):
        self.geo = geo
        abits = max(1, (geo.depth - 1).bit_length())
        super().__init__(
            {
                "s_beat": In(beat_stream(geo)),
                "s_dec": In(strobe(decision_layout(geo))),
                "used": In(geo.nslots),
                "gen": In(geo.nslots),
                "s_rel": In(strobe(release_layout(geo))),
                "s_mnt": In(strobe(maintenance_layout(geo))),
                "w_en": Out(1),
                "w_addr": Out(abits),
                "w_data": Out(geo.word_bits),
                "done": Out(geo.nslots),
                "bad": Out(geo.nslots),
                "fill": Out(geo.slot_bits + 1).array(geo.nslots),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        B, sb = g.bpb, g.slot_bits
        beat = self.s_beat.payload
        dlay = decision_layout(g)
        m.submodules.beats = bfifo = SyncFIFO(width=g.word_bits + 1, depth=g.hdr_beat + 8)
        m.submodules.decisions = dfifo = SyncFIFO(width=dlay.size, depth=8)
        cnt = sum(beat.keep[k] for k in range(B)) - 1
        m.d.comb += [
            bfifo.w_en.eq(self.s_beat.valid),
            bfifo.w_data.eq(Cat(beat.data, beat.last, cnt[: g.cnt_bits], beat.user[0])),
            dfifo.w_en.eq(self.s_dec.valid),
            dfifo.w_data.eq(self.s_dec.payload.as_value()),
        ]
        # ---- stage 0: pop into registers (nothing after the FIFOs' outputs) -------------
        pop = bfifo.r_rdy & dfifo.r_rdy
        p_last = bfifo.r_data[g.data_width]
        m.d.comb += [bfifo.r_en.eq(pop), dfifo.r_en.eq(pop & p_last)]
        at_start = Signal(init=1)  # the next beat popped starts a frame
        with m.If(pop):
            m.d.sync += at_start.eq(p_last)
        v0, first0 = Signal(), Signal()
        word0 = Signal(g.word_bits + 1)
        dec0 = Signal(dlay)
        m.d.sync += v0.eq(pop)
        with m.If(pop):
            m.d.sync += [word0.eq(bfifo.r_data), dec0.eq(dfifo.r_data), first0.eq(at_start)]

        # ---- stage 1: the slot's fill level and owner, from registers ------------------
        rel, mnt = self.s_rel, self.s_mnt

        def freed(slot):
            return (rel.valid & (rel.payload.slot == slot)) | (
                mnt.valid & ~mnt.payload.jump & (mnt.payload.slot == slot)
            )

        wv, wfirst, wfwd, wown = Signal(), Signal(), Signal(), Signal()
        wword = Signal(g.word_bits + 1)
        wdec = Signal(data.StructLayout({"accept": 1, "claim": 1, "last": 1, "slot": g.slot_index_bits}))
        wbase = Signal(sb + 1)  # start offset (claim: 0, else fill)
        fill_sel = Cat(*self.fill).word_select(dec0.slot, sb + 1)
        fill_we = Signal()
        m.d.sync += wv.eq(v0)
        with m.If(v0):
            m.d.sync += [
                wword.eq(word0),
                wfirst.eq(first0),
                *[getattr(wdec, f).eq(getattr(dec0, f)) for f in ("accept", "claim", "last", "slot")],
                wbase.eq(Mux(dec0.claim, 0, fill_sel)),
                # the frame ending in stage 2 now writes this slot's fill level
                wfwd.eq(wv & wword[g.data_width] & (wdec.slot == dec0.slot)),
                # the slot still holds the container the frame was accepted for (a
                # free in this clock counts; one in the next clock wins over the marks)
                wown.eq(
                    self.used.bit_select(dec0.slot, 1)
                    & (self.gen.bit_select(dec0.slot, 1) == dec0.gen)
                    & ~freed(dec0.slot)
                ),
            ]

        # ---- stage 2: address, RAM write, end-of-frame marks ---------------------------
        wptr = Signal(sb + 1)
        prev_end, prev_we = Signal(sb + 1), Signal()
        w_last = wword[g.data_width]
        w_user = wword[g.word_bits]
        start_ofs = Mux(wfwd & prev_we & ~wdec.claim, prev_end, wbase)
        addr = Signal(sb + 1)
        m.d.comb += addr.eq(Mux(wfirst, start_ofs, wptr))
        inb = ~addr[sb]  # addr < slot_beats
        nxt = Signal(sb + 1)
        m.d.comb += nxt.eq(addr + inb)  # saturates at slot_beats
        owner = wown
        ovf = Signal()  # a beat of this frame did not fit
        m.d.sync += [
            self.w_en.eq(wv & wdec.accept & owner & inb),
            self.w_addr.eq(Cat(addr[:sb], wdec.slot)),
            self.w_data.eq(wword[: g.word_bits]),
        ]
        with m.If(wv):
            m.d.sync += [wptr.eq(nxt), ovf.eq(Mux(wfirst, ~inb, ovf | ~inb))]
        frame_ovf = (ovf & ~wfirst) | ~inb
        m.d.comb += fill_we.eq(wv & w_last & wdec.accept & owner)
        with m.If(wv & w_last):
            m.d.sync += [prev_end.eq(nxt), prev_we.eq(fill_we)]
        for i in range(g.nslots):
            here = fill_we & (wdec.slot == i)
            free = freed(i)
            with m.If(here):
                m.d.sync += self.fill[i].eq(nxt)
            m.d.sync += [
                self.done[i].eq((self.done[i] | (here & wdec.last)) & ~free),
                self.bad[i].eq((self.bad[i] | (here & (w_user | frame_ovf))) & ~free),
            ]
        return m
