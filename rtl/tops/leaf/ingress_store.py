"""IngressStore: the always-ready frame store at a leaf's host ports, with pause and a
per-frame descriptor."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...lib.sram import SRAM
from ...lib.stream import AXIStreamSignature, check_data_width

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
      passes it, in ``stat_drop_long``. ``tkeep`` of a last beat must be contiguous
      from byte 0.
    * ``info`` (in): sampled with each frame's last beat, stored with it.
    * ``m_desc`` (out, :func:`store_desc_layout`): one per stored frame, in order: its
      length and ``info``; valid together with (no later than) the frame's first beat.
      The consumer takes it once per frame, at any time.
    * ``m_axis`` (out): the stored frames, ``tuser`` 0, store-and-forward.
    * ``pause`` (out, registered): set while more than ``xoff_bytes`` are stored,
      cleared once fewer than ``xon_bytes`` are (hysteresis); ``level`` (out): beats
      stored (the frame being written included).
    * ``stat_frames`` (frames stored), ``stat_drop_overflow``, ``stat_drop_bad``,
      ``stat_drop_runt``, ``stat_drop_long``, ``stat_pause_cycles`` (clocks with
      ``pause`` set). 32-bit.

    Timing: a frame and its descriptor become visible 2 clocks after its last beat was
    written; then one beat per clock, no bubble between frames. Storage: one SRAM of
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
        s, o, d = self.s_axis, self.m_axis, self.m_desc

        wr, cw, cw_d, rd = (Signal(aw + 1, name=n) for n in ("wr", "cw", "cw_d", "rd"))
        dwp, dwp_d, drp = (Signal(dw + 1, name=n) for n in ("dwp", "dwp_d", "drp"))
        dropping = Signal()  # the rest of the current frame is thrown away
        nbytes = Signal(16)  # bytes of the current frame before this beat
        m.d.sync += [cw_d.eq(cw), dwp_d.eq(dwp)]
        m.d.comb += [s.ready.eq(1), self.level.eq(wr - rd)]

        full = (wr - rd)[: aw + 1] == self.depth
        desc_full = (dwp - drp)[: dw + 1] == self.desc_depth
        keep_bytes = Signal(range(kw + 1))
        for k in range(kw):
            with m.If(s.payload.keep[k]):
                m.d.comb += keep_bytes.eq(k + 1)
        length = Signal(17)
        m.d.comb += length.eq(nbytes + keep_bytes)

        take = s.valid
        overflow = Signal()
        m.d.comb += overflow.eq(full | (s.payload.last & desc_full) | (length > 0xFFFF))
        # a frame longer than the leaf's largest would overrun the stores behind it
        # (the uplink queues hold one tagged max frame): dropped here, counted apart
        too_long = Signal()
        m.d.comb += too_long.eq((length > self.max_bytes) if self.max_bytes else 0)
        with m.If(take):
            with m.If(s.payload.last):
                m.d.sync += [nbytes.eq(0), dropping.eq(0)]
            with m.Else():
                m.d.sync += nbytes.eq(length[:16])
            with m.If(dropping):
                with m.If(s.payload.last):
                    m.d.sync += wr.eq(cw)
            with m.Elif(overflow | too_long):
                with m.If(too_long):
                    m.d.sync += self.stat_drop_long.eq(self.stat_drop_long + 1)
                with m.Else():
                    m.d.sync += self.stat_drop_overflow.eq(self.stat_drop_overflow + 1)
                with m.If(s.payload.last):
                    m.d.sync += wr.eq(cw)
                with m.Else():
                    m.d.sync += dropping.eq(1)
            with m.Else():
                m.d.comb += [
                    mem.w_en.eq(1),
                    mem.w_addr.eq(wr[:aw]),
                    mem.w_data.eq(Cat(s.payload.data, s.payload.keep, s.payload.last)),
                ]
                with m.If(s.payload.last & s.payload.user[0]):
                    m.d.sync += [wr.eq(cw), self.stat_drop_bad.eq(self.stat_drop_bad + 1)]
                with m.Elif(s.payload.last & (length < self.min_bytes)):
                    m.d.sync += [wr.eq(cw), self.stat_drop_runt.eq(self.stat_drop_runt + 1)]
                with m.Elif(s.payload.last):
                    m.d.comb += [
                        dmem.w_en.eq(1),
                        dmem.w_addr.eq(dwp[:dw]),
                        dmem.w_data.eq(Cat(length[:16], self.info)),
                    ]
                    m.d.sync += [
                        wr.eq(wr + 1),
                        cw.eq(wr + 1),
                        dwp.eq(dwp + 1),
                        self.stat_frames.eq(self.stat_frames + 1),
                    ]
                with m.Else():
                    m.d.sync += wr.eq(wr + 1)

        # -- read sides: each SRAM's read register is its output register
        # rd + 1 and the output's valid are registers: the consumer's ready reaches the
        # block RAM's read address through one multiplexer, not an adder
        adv = o.valid & o.ready
        rd1, o_valid = Signal(aw + 1, init=1, name="rd1"), Signal(name="o_valid")
        rd_next = Mux(adv, rd1, rd)
        m.d.sync += o_valid.eq(rd_next != cw)  # = rd != cw_d in the next clock
        m.d.comb += [
            o.valid.eq(o_valid),
            mem.r0_addr.eq(rd_next[:aw]),
            o.payload.data.eq(mem.r0_data[:w]),
            o.payload.keep.eq(mem.r0_data[w : w + kw]),
            o.payload.last.eq(mem.r0_data[w + kw]),
            o.payload.user.eq(0),
        ]
        with m.If(adv):
            m.d.sync += [rd.eq(rd1), rd1.eq(rd1 + 1)]
        dadv = d.valid & d.ready
        m.d.comb += [d.valid.eq(drp != dwp_d), dmem.r0_addr.eq((drp + dadv)[:dw]), d.payload.eq(dmem.r0_data)]
        with m.If(dadv):
            m.d.sync += drp.eq(drp + 1)

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
