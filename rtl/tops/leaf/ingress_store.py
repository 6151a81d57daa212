"""IngressStore: the always-ready frame store at a leaf's host ports, with pause and a
per-frame descriptor."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...lib.skid_buffer import SkidBuffer
from ...lib.sram import SRAM
from ...lib.stream import AXIStreamSignature, axis_beat_layout, check_data_width

__all__ = ["IngressStore", "store_desc_layout"]


def store_desc_layout(info_width):
    """One stored frame: its length in bytes and the ``info`` sampled at its last beat."""
    return data.StructLayout({"len": 16, "info": max(1, info_width)})


def _pow2(n):
    return n >= 2 and n & (n - 1) == 0


class IngressStore(wiring.Component):
    """Store-and-forward frame FIFO that never back-pressures its input.

    Parameters: ``depth`` (beats, a power of two), ``data_width``, ``info_width``
    (bits of the per-frame ``info``), ``desc_depth`` (frames it can hold, a power of
    two; default ``depth // 8``: 60-byte frames at 64 bits), ``xoff_bytes`` /
    ``xon_bytes`` (pause thresholds on the stored bytes, ``xon <= xoff``),
    ``min_bytes`` (shorter frames are dropped as runts; 0: none), ``max_bytes``
    (longer frames are dropped; 0: none, up to 65535).

    Interface:

    * ``s_axis`` (in): frames; ``tready`` is always 1. ``tuser`` on a last beat marks a
      bad frame: dropped whole (``stat_drop_bad``). A frame that does not fit (the data
      store is full at one of its beats, or ``desc_depth`` frames are stored) is dropped
      whole and counted in ``stat_drop_overflow``; a frame shorter than ``min_bytes``
      in ``stat_drop_runt``; one longer than ``max_bytes`` whole, from the beat that
      passes it, in ``stat_drop_long``. ``tkeep`` must be all ones before a frame's
      last beat and contiguous from byte 0 on it.
    * ``info`` (in): sampled with each frame's last beat, stored with it.
    * ``m_desc`` (out, :func:`store_desc_layout`): one per stored frame, in order: its
      length and ``info``; valid together with (no later than) the frame's first beat.
      The consumer takes it once per frame, at any time.
    * ``m_axis`` (out): the stored frames, ``tuser`` 0, store-and-forward.
    * ``pause`` (out, registered): set while more than ``xoff_bytes`` are stored,
      cleared once fewer than ``xon_bytes`` are (hysteresis); ``level`` (out): beats
      stored (the frame being written included, the up to two in the output slice
      not).
    * ``stat_frames`` (frames stored), ``stat_drop_overflow``, ``stat_drop_bad``,
      ``stat_drop_runt``, ``stat_drop_long``, ``stat_pause_cycles`` (clocks with
      ``pause`` set). 32-bit.

    Timing: a frame's descriptor becomes visible 2 clocks after its last beat was
    written, its beats 3 clocks after (the block RAM's output passes a register slice:
    ``m_axis`` is registered and its ``ready`` reaches no read address); then one beat
    per clock, no bubble between frames. The frame's length and drops are decided
    without an adder or a compare behind the input beat (flags registered a beat
    ahead). The counters count a clock after their event. Storage: one SRAM of
    ``depth`` x (data + keep + last) and one of ``desc_depth`` x (16 + ``info_width``).
    """

    def __init__(
        self,
        depth,
        data_width=64,
        info_width=1,
        desc_depth=None,
        xoff_bytes=None,
        xon_bytes=None,
        min_bytes=0,
        max_bytes=0,
    ):
        if not _pow2(depth):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        self.data_width = check_data_width(data_width)
        self.depth, self.bpb = depth, data_width // 8
        self.desc_depth = desc_depth or max(2, depth // 8)
        if not _pow2(self.desc_depth):
            raise ValueError(f"desc_depth must be a power of two >= 2, not {desc_depth!r}")
        cap = depth * self.bpb
        self.xoff_bytes = cap if xoff_bytes is None else xoff_bytes
        self.xon_bytes = self.xoff_bytes if xon_bytes is None else xon_bytes
        if not 0 <= self.xon_bytes <= self.xoff_bytes <= cap:
            raise ValueError("need 0 <= xon_bytes <= xoff_bytes <= depth * bytes per beat")
        if not 0 <= max_bytes <= 0xFFFF:
            raise ValueError(f"max_bytes must be 0..65535, not {max_bytes!r}")
        self.min_bytes, self.max_bytes, self.info_width = min_bytes, max_bytes, max(1, info_width)
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "info": In(self.info_width),
                "m_desc": Out(stream.Signature(store_desc_layout(self.info_width))),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "pause": Out(1),
                "level": Out(range(depth + 1)),
                "stat_frames": Out(32),
                "stat_drop_overflow": Out(32),
                "stat_drop_bad": Out(32),
                "stat_drop_runt": Out(32),
                "stat_drop_long": Out(32),
                "stat_pause_cycles": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w, kw, bpb = self.data_width, self.data_width // 8, self.bpb
        aw, dw = (self.depth - 1).bit_length(), (self.desc_depth - 1).bit_length()
        m.submodules.mem = mem = SRAM(w + kw + 1, self.depth)
        m.submodules.desc_mem = dmem = SRAM(16 + self.info_width, self.desc_depth)
        s, d = self.s_axis, self.m_desc

        wr, cw, rd = (Signal(aw + 1, name=n) for n in ("wr", "cw", "rd"))
        dwp, drp = (Signal(dw + 1, name=n) for n in ("dwp", "drp"))
        dropping = Signal()  # the rest of the current frame is thrown away
        m.d.comb += [s.ready.eq(1), self.level.eq(wr - rd)]

        # level <= depth always (no write when full): full is the top bit of wr - rd,
        # a carry chain out, not a compare of its bits
        full = (wr - rd)[aw]
        desc_full = (dwp - drp)[dw]

        # -- the frame's length without an adder or a compare behind the beat: beats
        # before this one counted, the flags "beats == q" / "beats > q" of each length
        # limit q * bpb + r registered a beat ahead, and "keep bytes > r" is keep[r]
        # (keep is full before the last beat and contiguous from byte 0 on it)
        lb = (bpb - 1).bit_length()
        nbeats = Signal(17 - lb)  # beats of the current frame before this one
        nbeats1 = Signal(17 - lb, init=1)  # nbeats + 1
        with m.If(s.valid):
            with m.If(s.payload.last):
                m.d.sync += [nbeats.eq(0), nbeats1.eq(1)]
            with m.Else():
                m.d.sync += [nbeats.eq(nbeats1), nbeats1.eq(nbeats1 + 1)]

        def longer_than(limit):  # this beat ends past `limit` bytes
            q, r = divmod(limit, bpb)
            eq, gt = Signal(init=int(q == 0), name=f"beats_eq_{limit}"), Signal(name=f"beats_gt_{limit}")
            with m.If(s.valid):
                with m.If(s.payload.last):
                    m.d.sync += [eq.eq(q == 0), gt.eq(0)]
                with m.Else():
                    m.d.sync += [eq.eq(nbeats == q - 1 if q else 0), gt.eq(gt | eq)]
            return gt | (eq & s.payload.keep[r])

        kb = Signal(max(1, lb), name="keep_bytes")  # bytes of a partial last beat
        for k in range(1, bpb):
            with m.If(s.payload.keep[k - 1]):
                m.d.comb += kb.eq(k)
        length = Signal(16)
        m.d.comb += length.eq(
            Mux(s.payload.keep[bpb - 1], Cat(Const(0, lb), nbeats1), Cat(kb[:lb], nbeats[: 16 - lb]))
        )
        # a frame longer than the leaf's largest would overrun the stores behind it
        # (the uplink queues hold one tagged max frame): dropped here, counted apart;
        # without a limit, one past 0xFFFF bytes (the descriptor's length) overflows
        too_long = longer_than(self.max_bytes) if self.max_bytes else 0
        too_big = 0 if self.max_bytes else longer_than(0xFFFF)
        runt = ~longer_than(self.min_bytes - 1) if self.min_bytes else 0
        overflow = full | (s.payload.last & desc_full) | too_big

        # the counters count a clock after their event: the strobes are registers
        names = ("frames", "drop_overflow", "drop_bad", "drop_runt", "drop_long")
        inc = {n: Signal(name=f"inc_{n}") for n in names}
        m.d.sync += [v.eq(0) for v in inc.values()]
        for n, v in inc.items():
            with m.If(v):
                m.d.sync += getattr(self, f"stat_{n}").eq(getattr(self, f"stat_{n}") + 1)
        # The memories' address and data are the beat's whatever the decisions below:
        # only the write enables carry them (the overflow and drop logic stays off the
        # write data: on the ECPIX-5 leaf it was in front of the descriptor memory's
        # write data, 10.8 ns with the routes).
        m.d.comb += [
            mem.w_addr.eq(wr[:aw]),
            mem.w_data.eq(Cat(s.payload.data, s.payload.keep, s.payload.last)),
            dmem.w_addr.eq(dwp[:dw]),
            dmem.w_data.eq(Cat(length, self.info)),
        ]
        with m.If(s.valid):
            # one expression (not "0 on a last beat, 1 when ..."): Yosys would make a
            # synchronous reset of this flip-flop alone, a control set of one flip-flop
            # (hard to place on a nearly full ECP5, docs/boards.md)
            m.d.sync += dropping.eq(~s.payload.last & (dropping | overflow | too_long))
            with m.If(dropping):
                with m.If(s.payload.last):
                    m.d.sync += wr.eq(cw)
            with m.Elif(overflow | too_long):
                with m.If(too_long):
                    m.d.sync += inc["drop_long"].eq(1)
                with m.Else():
                    m.d.sync += inc["drop_overflow"].eq(1)
                with m.If(s.payload.last):
                    m.d.sync += wr.eq(cw)
            with m.Else():
                m.d.comb += mem.w_en.eq(1)
                with m.If(s.payload.last & s.payload.user[0]):
                    m.d.sync += [wr.eq(cw), inc["drop_bad"].eq(1)]
                with m.Elif(s.payload.last & runt):
                    m.d.sync += [wr.eq(cw), inc["drop_runt"].eq(1)]
                with m.Elif(s.payload.last):
                    m.d.comb += dmem.w_en.eq(1)
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1), dwp.eq(dwp + 1), inc["frames"].eq(1)]
                with m.Else():
                    m.d.sync += wr.eq(wr + 1)

        # -- read sides: each SRAM's read register is its output register. rd + 1 and
        # the valid flags are registers, and both compares are of registers in parallel
        # with the advance: the consumer's ready reaches a read address through one
        # multiplexer. The beats then pass a register slice: the block RAM's slow
        # output and the consumer's pop logic meet only through flip-flops, and the
        # slice's ready (a register) is what advances the read address.
        m.submodules.out = out = SkidBuffer(axis_beat_layout(w, 1), sink="s_axis", source="m_axis")
        wiring.connect(m, out.m_axis, wiring.flipped(self.m_axis))
        o = out.s_axis
        adv = o.valid & o.ready
        rd1, o_valid = Signal(aw + 1, init=1, name="rd1"), Signal(name="o_valid")
        m.d.sync += o_valid.eq(Mux(adv, rd1 != cw, rd != cw))
        m.d.comb += [
            o.valid.eq(o_valid),
            mem.r0_addr.eq(Mux(adv, rd1, rd)[:aw]),
            o.payload.data.eq(mem.r0_data[:w]),
            o.payload.keep.eq(mem.r0_data[w : w + kw]),
            o.payload.last.eq(mem.r0_data[w + kw]),
            o.payload.user.eq(0),
        ]
        with m.If(adv):
            m.d.sync += [rd.eq(rd1), rd1.eq(rd1 + 1)]
        # a descriptor is valid from the clock after its write (dwp then, read of it)
        drp1, d_valid = Signal(dw + 1, init=1, name="drp1"), Signal(name="d_valid")
        dadv = d_valid & d.ready
        m.d.sync += d_valid.eq(Mux(dadv, drp1 != dwp, drp != dwp))
        m.d.comb += [
            d.valid.eq(d_valid),
            dmem.r0_addr.eq(Mux(dadv, drp1, drp)[:dw]),
            d.payload.eq(dmem.r0_data),
        ]
        with m.If(dadv):
            m.d.sync += [drp.eq(drp1), drp1.eq(drp1 + 1)]

        # -- pause with hysteresis on the stored bytes (registered)
        stored = Signal(aw + 1 + bpb.bit_length())
        m.d.comb += stored.eq((wr - rd)[: aw + 1] * bpb)
        with m.If(stored > self.xoff_bytes):
            m.d.sync += self.pause.eq(1)
        with m.Elif(stored < self.xon_bytes):
            m.d.sync += self.pause.eq(0)
        with m.If(self.pause):
            m.d.sync += self.stat_pause_cycles.eq(self.stat_pause_cycles + 1)
        return m
