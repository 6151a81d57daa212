"""ECMPSelector: the classic baseline's uplink choice, one uplink per flow by a CRC hash.

In the leaf's ``lb = "ecmp"`` mode it takes the place of the sprayer (docs/ecmp.md): the
tagged frames of one host port arrive, each is sent whole on the uplink its flow key
hashes to, at once (no request/grant, no container). Frames of one flow always take the
same uplink while the healthy set stays the same, so a flow never reorders.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import GSE_ETHERTYPE
from ..lib.packet_demux import PacketDemux
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["ECMPSelector", "KEY_BYTES", "CRC32_POLY_REFLECTED", "crc_matrix", "EXPORTS"]

#: Frame byte offsets (of a tagged frame: Ethernet 14 + GSE 18, IPv4 at 32) read by the
#: selector: DA, SA, EtherType, next_type, IPv4 version/IHL, flags/fragment offset,
#: protocol, source and destination address, UDP/TCP ports (IHL 5).
IPV4 = 32
OFF_TYPE, OFF_NEXT_TYPE = 12, 30
OFF_VER_IHL, OFF_FRAG, OFF_PROTO, OFF_SRC, OFF_DST, OFF_PORTS = (
    IPV4,
    IPV4 + 6,
    IPV4 + 9,
    IPV4 + 12,
    IPV4 + 16,
    IPV4 + 20,
)
LAST_KEY_BYTE = OFF_PORTS + 3  # frame byte 55: the decision is made on its beat
USED = sorted(
    set(range(12))
    | {
        OFF_TYPE,
        OFF_TYPE + 1,
        OFF_NEXT_TYPE,
        OFF_NEXT_TYPE + 1,
        OFF_VER_IHL,
        OFF_FRAG,
        OFF_FRAG + 1,
        OFF_PROTO,
    }
    | set(range(OFF_SRC, OFF_PORTS + 4))
)
KEY_BYTES = 13  # src IP 4, dst IP 4, proto 1, sport 2, dport 2 (or DA 6, SA 6, 0)
CRC32_POLY_REFLECTED = 0xEDB88320  # the IEEE 802.3 CRC-32, bit-reflected form

BEAT_FIFO_DEPTH = 16


def crc_matrix(n_bytes, poly=CRC32_POLY_REFLECTED, width=32):
    """The reflected CRC over ``n_bytes`` bytes as a linear map: for each output bit, the
    mask of state bits (bits 0..width-1: the start value) and data bits (bit width + 8k
    + j: bit j of byte k, bytes in order, each LSB first) that XOR into it."""
    state = [1 << i for i in range(width)]  # each state bit as a mask of inputs
    for k in range(n_bytes):
        for j in range(8):
            fb = state[0] ^ (1 << (width + 8 * k + j))
            state = [state[i + 1] if i + 1 < width else 0 for i in range(width)]
            for i in range(width):
                if (poly >> i) & 1:
                    state[i] ^= fb
    return state


class ECMPSelector(wiring.Component):
    """Per-flow uplink choice by a CRC-32 of the flow key, reduced onto the healthy uplinks.

    Parameters
    ----------
    uplinks : int
        U outputs (1..16; with one, every flow takes uplink 0 while it is healthy).
    data_width : int
        Width of ``tdata`` (a power of two, 8..512).
    ethertype : int
        The GSE EtherType (frames without it are hashed on their MACs).

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature(data_width))``
        Tagged frames of one host port (the tagger's output). ``tuser`` passes on.
    ``m_axis[0..U-1]`` : ``Out(AXIStreamSignature(data_width))``
        The uplinks (exported ``m_axis_<u>_t*``), whole frames; ``tvalid`` and the beat
        are registers.
    ``seed`` : ``In(32)``
        The CRC start value (the switch's hash seed), read when a frame's key is
        complete.
    ``healthy`` : ``In(U)``
        Uplinks a frame may take, read when its key is complete. None: the frame is
        dropped whole and counted.
    ``stat_frames[0..U-1]`` : ``Out(32)``
        Frames sent on each uplink.
    ``stat_mac_hashed`` : ``Out(32)``
        Frames hashed on their MACs (not IPv4-in-GSE, or shorter than 56 bytes).
    ``stat_drop_no_uplink`` : ``Out(32)``
        Frames dropped because no uplink was healthy.

    Hash
    ----
    The key is 13 bytes. A frame with the GSE EtherType (bytes 12-13), ``next_type``
    0x0800 (bytes 30-31), IPv4 version 4 with IHL 5 (byte 32 = 0x45) and at least 56
    bytes is keyed on (source address, destination address, protocol, source port,
    destination port), the ports read from bytes 52-55 when the protocol is UDP (17)
    or TCP (6) and the packet is not a fragment (MF and fragment offset 0), else 0.
    Any other frame is keyed on (DA, SA, 0); bytes a short frame lacks count as 0.
    ``h`` = the bit-reflected CRC-32 (polynomial 0x04C11DB7) of the key, register
    started at ``seed``, no final inversion (= ``~crc32(key, ~seed)`` of zlib). With
    ``n`` healthy uplinks the frame takes the ``r``-th healthy one counting from uplink
    0, ``r = ((h mod 2**16) * n) >> 16`` (multiply-high: the top bits of the hash's low
    half pick among ``n``, as fair as a modulo and without a divider). When the healthy
    set changes, flows of healthy links may move too (no resilient hashing).

    Because the CRC is linear, ``h(key, seed) = h(key, 0) ^ h(0, seed)`` for a fixed key
    length: a seed alone XORs every flow's hash with one constant, which for a power-of-
    two ``n`` only relabels the uplinks (the same flows collide). What moves flows is
    the key: the per-flow UDP source port a RoCEv2 NIC draws per queue pair.

    Timing
    ------
    Frames wait in a 16-beat FIFO until their key beat (frame byte 55) arrived and the
    choice is made (4 register stages); then 1 beat per clock. A frame's first beat
    leaves 12 clocks after it arrived at full rate (64-bit); back-to-back frames flow
    without a bubble (the choices come as far apart as the frames).
    """

    def __init__(self, uplinks=4, data_width=64, ethertype=GSE_ETHERTYPE):
        if not isinstance(uplinks, int) or not 1 <= uplinks <= 16:
            raise ValueError(f"uplinks must be 1..16, not {uplinks!r}")
        self.uplinks, self.ethertype = uplinks, ethertype
        self.data_width = check_data_width(data_width)
        sig = AXIStreamSignature(data_width)
        super().__init__(
            {
                "s_axis": In(sig),
                "m_axis": Out(sig).array(uplinks),
                "seed": In(32),
                "healthy": In(uplinks),
                "stat_frames": Out(32).array(uplinks),
                "stat_mac_hashed": Out(32),
                "stat_drop_no_uplink": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        U, w = self.uplinks, self.data_width
        bpb = w // 8
        s = self.s_axis

        # -- beats wait here for their frame's choice; the demux sends each frame whole
        m.submodules.beats = beats = SyncFIFOBuffered(width=w + bpb + 2, depth=BEAT_FIFO_DEPTH)
        m.submodules.demux = demux = PacketDemux(U, w)
        m.submodules.choices = choices = SyncFIFO(width=demux.sel_layout.size, depth=BEAT_FIFO_DEPTH + 2)
        take = Signal()
        m.d.comb += [
            s.ready.eq(beats.w_rdy),
            take.eq(s.valid & s.ready),
            beats.w_en.eq(take),
            beats.w_data.eq(Cat(s.payload.data, s.payload.keep, s.payload.last, s.payload.user)),
            demux.s_axis.valid.eq(beats.r_rdy),
            beats.r_en.eq(demux.s_axis.ready),
            demux.s_axis.payload.eq(beats.r_data),
            demux.s_sel.valid.eq(choices.r_rdy),
            choices.r_en.eq(demux.s_sel.ready),
            demux.s_sel.payload.eq(choices.r_data),
        ]
        for u in range(U):
            wiring.connect(m, demux.m_axis[u], wiring.flipped(self.m_axis[u]))
            mu = self.m_axis[u]
            with m.If(mu.valid & mu.ready & mu.payload.last):
                m.d.sync += self.stat_frames[u].eq(self.stat_frames[u] + 1)
        m.d.comb += self.stat_drop_no_uplink.eq(demux.stat_drop_unrouted)

        # -- the bytes of the key, captured as they pass (cleared after each frame)
        decide_beat = LAST_KEY_BYTE // bpb
        beat = Signal(range(decide_beat + 2))
        cap = {o: Signal(8, name=f"byte_{o}") for o in USED}
        val = {}
        for o, reg in cap.items():
            lane = s.payload.data.word_select(o % bpb, 8) & Mux(s.payload.keep[o % bpb], 0xFF, 0)
            here = beat == o // bpb
            val[o] = Mux(here, lane, reg)
            with m.If(take & here):
                m.d.sync += reg.eq(lane)
        with m.If(take):
            with m.If(s.payload.last):
                m.d.sync += beat.eq(0)
                m.d.sync += [reg.eq(0) for reg in cap.values()]
            with m.Elif(beat <= decide_beat):
                m.d.sync += beat.eq(beat + 1)
        decide = Signal()
        m.d.comb += decide.eq(take & ((beat == decide_beat) | (s.payload.last & (beat < decide_beat))))

        def be16(o):
            return Cat(val[o + 1], val[o])

        full = (beat == decide_beat) & s.payload.keep[LAST_KEY_BYTE % bpb]
        ip = Signal()
        l4 = Signal()
        m.d.comb += [
            ip.eq(
                full
                & (be16(OFF_TYPE) == self.ethertype)
                & (be16(OFF_NEXT_TYPE) == 0x0800)
                & (val[OFF_VER_IHL] == 0x45)
            ),
            l4.eq(
                ip
                & ((val[OFF_PROTO] == 6) | (val[OFF_PROTO] == 17))
                & ((val[OFF_FRAG] & 0x3F) == 0)
                & (val[OFF_FRAG + 1] == 0)
            ),
        ]
        ports = [Mux(l4, val[o], 0) for o in range(OFF_PORTS, OFF_PORTS + 4)]
        ip_key = Cat(*[val[o] for o in range(OFF_SRC, OFF_DST + 4)], val[OFF_PROTO], *ports)
        mac_key = Cat(*[val[o] for o in range(12)], Const(0, 8))
        key = Signal(8 * KEY_BYTES)
        m.d.comb += key.eq(Mux(ip, ip_key, mac_key))

        # -- stage 0: the key; 1: CRC-32 of it from the seed; 2: onto the healthy count
        # (multiply-high); 3: which uplink
        key_reg = Signal(8 * KEY_BYTES)
        h16 = Signal(16)  # the low 16 bits of the CRC: all the reduction reads
        v0, v1, v2, v3 = Signal(), Signal(), Signal(), Signal()
        health0, health1, health2 = Signal(U), Signal(U), Signal(U)
        with m.If(decide):
            m.d.sync += [key_reg.eq(key), health0.eq(self.healthy)]
            with m.If(~ip):
                m.d.sync += self.stat_mac_hashed.eq(self.stat_mac_hashed + 1)
        m.d.sync += v0.eq(decide)

        inputs = Cat(self.seed, key_reg)
        with m.If(v0):
            m.d.sync += [
                h16[i].eq(_xor_of(inputs, mask)) for i, mask in enumerate(crc_matrix(KEY_BYTES)[:16])
            ]
            m.d.sync += health1.eq(health0)
        m.d.sync += v1.eq(v0)

        count = Signal(range(U + 1))
        m.d.comb += count.eq(sum(health1[i] for i in range(U)))
        r = Signal(range(U))  # the rank among the healthy; no bits with one uplink (always 0)
        none = Signal()
        product = Signal(16 + len(r))  # h16 * count < count * 2**16: the top fits r
        m.d.comb += product.eq(h16 * count)
        with m.If(v1):
            m.d.sync += [r.eq(product[16:]), none.eq(count == 0)]
            m.d.sync += health2.eq(health1)
        m.d.sync += v2.eq(v1)

        pick = Signal(range(U + 1))
        m.d.comb += pick.eq(U)  # no healthy uplink: the demux drops the frame
        for i in reversed(range(U)):
            before = sum(health2[j] for j in range(i)) if i else Const(0)
            with m.If(~none & health2[i] & (before == r)):
                m.d.comb += pick.eq(i)
        choice = Signal(range(U + 1))
        with m.If(v2):
            m.d.sync += choice.eq(pick)
        m.d.sync += v3.eq(v2)
        m.d.comb += [choices.w_en.eq(v3), choices.w_data.eq(choice)]
        return m


def _xor_of(bits, mask):
    terms = [bits[i] for i in range(len(bits)) if (mask >> i) & 1]
    out = terms[0]
    for t in terms[1:]:
        out = out ^ t
    return out


EXPORTS = [
    BlockSpec(
        name="ecmp_selector",
        module="gse_ecmp_selector",
        factory=ECMPSelector,
        params={"uplinks": 4, "data_width": 64, "ethertype": GSE_ETHERTYPE},
        description="ECMP baseline: each tagged frame whole to the healthy uplink its flow key "
        "(IPv4 addresses, protocol, UDP/TCP ports; MACs otherwise) hashes to by CRC-32 "
        "from a seed, reduced onto the healthy uplinks",
    )
]
