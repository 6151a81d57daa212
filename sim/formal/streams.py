"""Building blocks of the formal wrappers: packet-stream observers and a shadow queue.

* :func:`assume_packet_keep`: frames on an AXI-Stream are contiguous (``tkeep`` all
  ones but on the last beat, where it is ``2**k - 1``, k >= 1), as the brief has it.
* :class:`FrameTracker`: the beat index and byte count of the frame in progress on a
  stream, and the frame's length at its last beat.
* :class:`ShadowQueue`: a small FIFO of expected values kept by a wrapper (push at the
  input, pop and compare at the output); it asserts it never overflows.
"""

from amaranth.hdl import Array, Assert, Assume, Mux, Signal, Value

__all__ = ["assume_packet_keep", "assume_stream_rules", "FrameTracker", "ShadowQueue", "byte_of"]


def assume_packet_keep(m, axis):
    keep = axis.payload.keep
    n = len(keep)
    contiguous = keep == 1
    for k in range(2, n + 1):
        contiguous |= keep == (1 << k) - 1
    with m.If(axis.valid):
        with m.If(axis.payload.last):
            m.d.comb += Assume(contiguous)
        with m.Else():
            m.d.comb += Assume(keep == (1 << n) - 1)


def byte_of(axis, lane):
    return axis.payload.data[8 * lane : 8 * lane + 8]


class FrameTracker:
    """Observer of one AXI-Stream (valid, ready, payload): ``beat`` (index of the beat on
    offer within its frame, saturating at ``max_beats``), ``fire`` (a beat moves),
    ``bytes_before`` (bytes of the frame before the beat on offer, saturating),
    ``length`` (the frame's length, meaningful when ``fire & last``), ``end`` (``fire &
    last``)."""

    def __init__(self, m, axis, *, max_beats=15, len_bits=8, name="trk"):
        self.axis = axis
        keep = axis.payload.keep
        self.beat = Signal(range(max_beats + 1), name=f"{name}_beat")
        self.bytes_before = Signal(len_bits, name=f"{name}_bytes")
        self.fire = Signal(name=f"{name}_fire")
        self.end = Signal(name=f"{name}_end")
        self.length = Signal(len_bits + 1, name=f"{name}_len")
        nbytes = Signal(range(len(keep) + 1), name=f"{name}_nb")
        top = (1 << len_bits) - 1
        m.d.comb += [
            self.fire.eq(axis.valid & axis.ready),
            self.end.eq(self.fire & axis.payload.last),
            nbytes.eq(sum(keep[k] for k in range(len(keep)))),
            self.length.eq(self.bytes_before + nbytes),
        ]
        with m.If(self.fire):
            with m.If(axis.payload.last):
                m.d.sync += [self.beat.eq(0), self.bytes_before.eq(0)]
            with m.Else():
                m.d.sync += [
                    self.beat.eq(Mux(self.beat == max_beats, self.beat, self.beat + 1)),
                    self.bytes_before.eq(Mux(self.length > top, top, self.length)),
                ]

    def at(self, beat):
        """The beat on offer is beat ``beat`` of its frame."""
        return self.axis.valid & (self.beat == beat)


class ShadowQueue:
    """FIFO of ``depth`` values of ``width`` bits. ``push(m, cond, value)`` and
    ``pop(m, cond)`` may happen in one clock; ``head`` is the oldest value, ``level``
    how many are stored. Asserts that it never overflows and is never popped empty
    (the name says which wrapper's expectation was wrong)."""

    def __init__(self, m, width, depth, *, name="shadow"):
        self.m, self.depth, self.name = m, depth, name
        self.mem = Array(Signal(width, name=f"{name}_{k}") for k in range(depth))
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self.head = Signal(width, name=f"{name}_head")
        self._push = Signal(name=f"{name}_push")
        self._pop = Signal(name=f"{name}_pop")
        self._value = Signal(width, name=f"{name}_value")
        m.d.comb += self.head.eq(self.mem[0])
        # shift register: pop shifts everything down by one
        for k in range(depth):
            nxt = self.mem[k + 1] if k + 1 < depth else 0
            cur = Mux(self._pop, nxt, self.mem[k])
            slot = Mux(self._pop, self.level - 1, self.level)
            m.d.sync += self.mem[k].eq(Mux(self._push & (slot == k), self._value, cur))
        m.d.sync += self.level.eq(self.level + self._push - self._pop)
        with m.If(self._push & ~self._pop):
            m.d.comb += Assert(self.level < depth, f"{name}: more in flight than the wrapper tracks")

    def push(self, m, cond, value):
        m.d.comb += [self._push.eq(cond), self._value.eq(value)]

    def pop(self, m, cond, what="an output with nothing expected"):
        m.d.comb += self._pop.eq(cond)
        with m.If(cond):
            m.d.comb += Assert(self.level > 0, f"{self.name}: {what}")


def assume_stream_rules(m, s, name="in"):
    """The valid/ready rule on an input stream ``s``: once offered, a transfer stays
    offered, unchanged, until it is taken (AXI4-Stream and ``amaranth.lib.stream``)."""
    payload = Value.cast(s.payload)
    held_valid = Signal(name=f"{name}_held")
    held = Signal(len(payload), name=f"{name}_held_payload")
    m.d.sync += [held_valid.eq(s.valid & ~s.ready), held.eq(payload)]
    with m.If(held_valid):
        m.d.comb += [Assume(s.valid), Assume(payload == held)]
