"""Header fields of each frame entering the reorder buffer, registered at the header's end.

Interface
---------
* ``s_beat`` (in, stream of AXI-Stream beats, always ready): the reorder buffer's
  input, observed (every beat is taken).
* ``m_req`` (out, stream, always ready; registered): one request per frame, a clock
  after the beat holding tagged header byte 31 (beat ``hdr_beat``); or, for a runt,
  with ``runt`` set: a frame that ends before beat ``hdr_beat`` (a clock after its
  last beat), or whose byte 31 has ``tkeep`` 0 on that beat (a clock after it, whether
  that beat is the last or empty beats follow). ``tkeep`` is taken as contiguous from
  byte 0, so a runt is exactly a frame of fewer than 32 valid bytes.
  Fields: ``src`` (low ``src_bits`` of ``src_node``), ``seq``, ``first``, ``last``
  (``flags`` bits 0 and 1), and ``ok``: the EtherType is the ``ethertype``
  parameter, ``ver`` is 1, ``type`` is DATA and ``src_node`` < ``sources``.
* ``frame_end`` (out): a registered pulse a clock after each frame's last beat.

Timing: requests are in frame order, at most one per clock. The byte fields are
captured from the beats before ``hdr_beat`` into registers; the comparisons of the
beat ``hdr_beat`` itself (``seq`` and its decrements for the window test, and the
EtherType at wide data) run from the input into the request register.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...header.gse_header import ETH_HEADER_BYTES, GSE_VERSION, GSEType, TAGGED_HEADER_BYTES
from ...lib.stream import axis_beat_layout

__all__ = ["FrameHeader", "request_layout"]

# frame bytes the decision needs: EtherType, ver/type, flags, src_node, seq
_BYTES = (
    12,
    13,
    ETH_HEADER_BYTES + 0,
    ETH_HEADER_BYTES + 1,
    ETH_HEADER_BYTES + 4,
    ETH_HEADER_BYTES + 5,
    ETH_HEADER_BYTES + 10,
    ETH_HEADER_BYTES + 11,
)


def request_layout(geo):
    hi = 16 - geo.win_bits
    # qm1 = (seq >> log2 W) - 1; sm1 = seq - 1; sm1_qm1 = (sm1 >> log2 W) - 1: for the
    # window test by equality (see ingress.py)
    return data.StructLayout(
        {
            "runt": 1,
            "ok": 1,
            "first": 1,
            "last": 1,
            "src": geo.src_bits,
            "seq": 16,
            "qm1": hi,
            "sm1": 16,
            "sm1_qm1": hi,
        }
    )


def beat_stream(geo):
    return stream.Signature(axis_beat_layout(geo.data_width), always_ready=True)


class FrameHeader(wiring.Component):
    def __init__(self, geo):
        self.geo = geo
        super().__init__(
            {
                "s_beat": In(beat_stream(geo)),
                "m_req": Out(stream.Signature(request_layout(geo), always_ready=True)),
                "frame_end": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        B, h = g.bpb, g.hdr_beat
        beat = self.s_beat.payload
        v = self.s_beat.valid
        ein = Signal(range(h + 2))  # beat index in the frame (saturating)
        # (of the flags byte only FIRST and LAST are kept)
        width = {k: 2 if k == ETH_HEADER_BYTES + 1 else 8 for k in _BYTES}
        held = {k: Signal(width[k], name=f"hb{k}") for k in _BYTES if k // B < h}

        def byte(k):
            return held[k] if k in held else byte_of_beat(beat, k, B)

        with m.If(v):
            for k, reg in held.items():
                with m.If(ein == k // B):
                    m.d.sync += reg.eq(byte_of_beat(beat, k, B)[: width[k]])
            with m.If(beat.last):
                m.d.sync += ein.eq(0)
            with m.Elif(ein <= h):
                m.d.sync += ein.eq(ein + 1)

        e = ETH_HEADER_BYTES
        ethertype = Cat(byte(13), byte(12))
        ver_type = byte(e)
        src = Cat(byte(e + 5), byte(e + 4))
        seq = Cat(byte(e + 11), byte(e + 10))
        # A runt holds fewer than 32 valid bytes: it ends before beat ``hdr_beat``, or
        # byte 31's tkeep bit is 0 on that beat (tkeep is contiguous from byte 0, so no
        # valid byte follows, however many empty beats do). Either way it is known by
        # beat ``hdr_beat``: the writer's beat FIFO never waits longer for a decision.
        k31 = beat.keep[(TAGGED_HEADER_BYTES - 1) % B]
        runt = Signal()
        m.d.comb += runt.eq(v & ((beat.last & (ein < h)) | ((ein == h) & ~k31)))
        decide = v & (ein == h) & k31
        req = self.m_req.payload
        m.d.sync += [
            self.m_req.valid.eq(decide | runt),
            req.runt.eq(runt),
            req.ok.eq(
                (ethertype == g.ethertype)
                & (ver_type[4:] == GSE_VERSION)
                & (ver_type[:4] == GSEType.DATA.value)
                & (src < g.sources)
            ),
            req.first.eq(byte(e + 1)[0]),
            req.last.eq(byte(e + 1)[1]),
            req.src.eq(src[: g.src_bits]),
            req.seq.eq(seq),
            req.qm1.eq(seq[g.win_bits :] - 1),
            req.sm1.eq(seq - 1),
            req.sm1_qm1.eq((seq - 1)[g.win_bits : 16] - 1),
            self.frame_end.eq(v & beat.last),
        ]
        return m


def byte_of_beat(beat, k, B):
    return beat.data[8 * (k % B) : 8 * (k % B) + 8]
