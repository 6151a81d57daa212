"""PacketBuffer: a packet FIFO in SRAM that drops bad frames whole (store-and-forward),
or admits frames by the length in their header and passes them on at once
(cut-through admission)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["PacketBuffer"]


class PacketBuffer(wiring.Component):
    """``depth`` beats (a power of two) of AXI4-Stream packets.

    * ``s_axis``: packets in; ``tuser`` on a last beat marks the packet bad (the
      cut-through contract of brief section 3): the whole packet is discarded (the write
      pointer goes back to the last committed packet) and ``stat_drop_bad`` counts it.
      ``tready`` is low while the buffer is full: a good packet is never dropped.
      A packet longer than ``depth`` beats can never fit: when the buffer is full and
      holds nothing but that packet, it is discarded (the rest is taken and thrown
      away) and ``stat_drop_oversize`` counts it.
    * ``drop_full`` (parameter, default False): instead of dropping ``tready`` when full,
      the buffer is always ready and a packet that finds it full is discarded whole (the
      write pointer goes back to the last committed packet, the rest of the packet is
      taken and thrown away) and ``stat_drop_full`` counts it (a member only with
      ``drop_full``). For a buffer that must never back-pressure its sender.
    * ``length_at`` (parameter, default None; needs ``drop_full``): **cut-through
      admission**, the leaf's per-uplink admission queues (docs/leaf.md, "All-to-all").
      ``(offset, extra)``: a packet's length in bytes is ``extra`` plus the big-endian
      16-bit field at byte ``offset`` (the GSE tag's ``len``: ``(26, 18)``). At the beat
      that completes that field the packet is admitted if its ``ceil(length / bytes per
      beat)`` beats fit in the free room behind the packets before it; it is then visible
      at once, beat by beat as it is written (the room is its own: packets are written
      one after another, and the reader only frees room). One that does not fit is
      discarded whole and counted in ``stat_drop_full`` (``stat_drop_oversize`` if
      longer than ``depth``). Once admitted a packet cannot be taken back, so a bad one
      (``tuser`` on its last beat) leaves with ``tuser`` set on its last beat (the next
      buffer drops it) and is counted in ``stat_bad_out`` (a member only with
      ``length_at``); so does one that has more beats than the room left: beats are
      thrown away while only one free beat is left, the last beat takes it. A packet
      that ends before the length field is complete is stored whole first (a bad one
      dropped and counted in ``stat_drop_bad``).
    * ``m_axis``: committed packets only (store-and-forward), ``tuser`` 0. A packet
      becomes visible 2 clocks after its last beat was written; then 1 beat per clock.
      ``tdata``/``tkeep``/``tlast`` come straight from the SRAM's read register.
      With ``length_at``: each beat of an admitted packet 2 clocks after it was written
      (its first beats 2 clocks after the admission beat), ``tuser`` as above.
    * ``level``: beats written and not yet read (committed or not).
    """

    def __init__(self, depth, data_width=64, drop_full=False, length_at=None):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        if length_at is not None and not drop_full:
            raise ValueError("length_at (cut-through admission) needs drop_full")
        self.depth = depth
        self.data_width = check_data_width(data_width)
        self.drop_full = bool(drop_full)
        self.length_at = None if length_at is None else (int(length_at[0]), int(length_at[1]))
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "level": Out(range(depth + 1)),
            "stat_drop_bad": Out(32),
            "stat_drop_oversize": Out(32),
        }
        if self.drop_full:
            members["stat_drop_full"] = Out(32)
        if self.length_at is not None:
            members["stat_bad_out"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        w = self.data_width
        kw = w // 8
        aw = (self.depth - 1).bit_length()
        cut = self.length_at is not None  # tuser is stored only by the cut-through queue
        m.submodules.mem = mem = SRAM(w + kw + 1 + cut, self.depth)
        o = self.m_axis

        self._wr = wr = Signal(aw + 1)  # next write (speculative, inside the current packet)
        self._cw = cw = Signal(aw + 1)  # end of what the reader may read
        cw_d = Signal(aw + 1)  # cw one clock later: the SRAM read register has caught up
        self._rd = rd = Signal(aw + 1)  # next beat to leave
        self._full = full = Signal()
        m.d.comb += [full.eq((wr - rd)[: aw + 1] == self.depth), self.level.eq(wr - rd)]
        m.d.sync += cw_d.eq(cw)
        if self.length_at is None:
            self._write_stored(m, mem)
        else:
            self._write_admitted(m, mem)

        # -- read side: the SRAM's read register is the output register
        advance = o.valid & o.ready
        m.d.comb += [
            o.valid.eq(rd != cw_d),
            mem.r0_addr.eq((rd + advance)[:aw]),
            o.payload.data.eq(mem.r0_data[:w]),
            o.payload.keep.eq(mem.r0_data[w : w + kw]),
            o.payload.last.eq(mem.r0_data[w + kw]),
            o.payload.user.eq(mem.r0_data[w + kw + 1] if cut else 0),
        ]
        with m.If(advance):
            m.d.sync += rd.eq(rd + 1)
        return m

    def _store(self, m, mem, user=0):
        """Write this clock's input beat at ``wr`` (``user`` into its tuser bit)."""
        s, aw = self.s_axis, (self.depth - 1).bit_length()
        fields = [s.payload.data, s.payload.keep, s.payload.last]
        if self.length_at is not None:
            fields.append(user)
        m.d.comb += [mem.w_en.eq(1), mem.w_addr.eq(self._wr[:aw]), mem.w_data.eq(Cat(*fields))]

    def _drop(self, m, to, counter):
        """Throw the packet being written away: back to ``to``, the rest of it discarded."""
        m.d.sync += [self._wr.eq(to), counter.eq(counter + 1)]

    def _write_stored(self, m, mem):
        """Store-and-forward: a packet becomes visible (``cw``) at its last beat."""
        s, wr, cw, rd, full = self.s_axis, self._wr, self._cw, self._rd, self._full
        discard = Signal()  # throwing away the rest of a dropped packet
        oversize = full & (cw == rd)  # only the packet being written is inside
        overflow = Signal()  # drop_full: no room for this beat, the packet goes whole
        if self.drop_full:
            m.d.comb += [s.ready.eq(1), overflow.eq(full & ~oversize)]
        else:
            m.d.comb += s.ready.eq(~full | discard | oversize)
        take = s.valid & s.ready
        with m.If(take):
            with m.If(discard | oversize | overflow):
                m.d.sync += discard.eq(~s.payload.last)
                with m.If(~discard):
                    with m.If(oversize):
                        self._drop(m, cw, self.stat_drop_oversize)
                    if self.drop_full:
                        with m.Else():
                            self._drop(m, cw, self.stat_drop_full)
            with m.Else():
                self._store(m, mem)
                with m.If(s.payload.last & s.payload.user):
                    self._drop(m, cw, self.stat_drop_bad)
                with m.Elif(s.payload.last):
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1)]
                with m.Else():
                    m.d.sync += wr.eq(wr + 1)

    def _write_admitted(self, m, mem):
        """Cut-through admission (``length_at``): the packet's fate is decided at the beat
        that completes its length field; from then on ``cw`` follows ``wr``.

        Invariant: a beat that is not a last beat is written only if one free beat stays
        behind it, so a packet's last beat always finds room (the buffer never waits);
        an admitted packet whose beats outrun that room is cut short and marked bad."""
        s, wr, cw, rd = self.s_axis, self._wr, self._cw, self._rd
        depth, bpb = self.depth, self.data_width // 8
        offset, extra = self.length_at
        hi_beat, dec_beat = offset // bpb, (offset + 1) // bpb
        fs = Signal.like(wr)  # this packet's first beat: where a drop goes back to
        beat = Signal(range(dec_beat + 2))  # beats of this packet so far (saturating)
        admitted, cut, discard = Signal(), Signal(), Signal()
        level = (wr - rd)[: len(wr)]
        room_for = Signal()  # this beat may be written (see the invariant)
        m.d.comb += [s.ready.eq(1), room_for.eq(Mux(s.payload.last, level < depth, level < depth - 1))]

        # the length field: its high byte may come a beat before its low byte
        lane_hi, lane_lo = offset % bpb, (offset + 1) % bpb
        hi_now = s.payload.data.word_select(lane_hi, 8)
        hi = Signal(8)
        if hi_beat < dec_beat:
            with m.If(s.valid & (beat == hi_beat)):
                m.d.sync += hi.eq(hi_now)
            hi_now = hi
        length = Cat(s.payload.data.word_select(lane_lo, 8), hi_now) + extra
        need = Signal(17 - bpb.bit_length() + 2)
        m.d.comb += need.eq((length + bpb - 1) >> (bpb.bit_length() - 1))
        fits = need <= (depth - (fs - rd)[: len(wr)])

        with m.If(s.valid):
            m.d.sync += beat.eq(Mux(s.payload.last, 0, Mux(beat > dec_beat, beat, beat + 1)))
            with m.If(discard):
                m.d.sync += discard.eq(~s.payload.last)
            with m.Elif(admitted):
                with m.If(s.payload.last):
                    self._store(m, mem, user=s.payload.user | cut)
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1), fs.eq(wr + 1), admitted.eq(0), cut.eq(0)]
                    with m.If(s.payload.user | cut):
                        m.d.sync += self.stat_bad_out.eq(self.stat_bad_out + 1)
                with m.Elif(cut | ~room_for):
                    m.d.sync += cut.eq(1)
                with m.Else():
                    self._store(m, mem)
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1)]
            with m.Elif(~room_for):  # no room before the decision: nothing of it is visible
                m.d.sync += discard.eq(~s.payload.last)
                with m.If(fs == rd):
                    self._drop(m, fs, self.stat_drop_oversize)
                with m.Else():
                    self._drop(m, fs, self.stat_drop_full)
            with m.Else():
                self._store(m, mem)
                decide = beat == dec_beat
                with m.If(s.payload.last & s.payload.user):
                    self._drop(m, fs, self.stat_drop_bad)
                with m.Elif(decide & (need > depth)):
                    m.d.sync += discard.eq(~s.payload.last)
                    self._drop(m, fs, self.stat_drop_oversize)
                with m.Elif(decide & ~fits):
                    m.d.sync += discard.eq(~s.payload.last)
                    self._drop(m, fs, self.stat_drop_full)
                with m.Elif(s.payload.last):  # short, or admitted and complete: commit
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1), fs.eq(wr + 1)]
                with m.Elif(decide):  # admitted: its beats so far become visible
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1), admitted.eq(1)]
                with m.Else():
                    m.d.sync += wr.eq(wr + 1)
