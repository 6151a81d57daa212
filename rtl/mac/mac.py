"""RGMII 1 Gb/s Ethernet MAC: RGMII pins on one side, AXI4-Stream frames on the other.

:class:`RGMIIMac` composes the receive path (``rx`` domain, clocked by the PHY's RXC)::

    RGMII pins -> RGMIIInput (DDR) -> RxFramer (SFD, CRC-32, runt, rx_er; FCS removed)
               -> BytePacker -> RxFrameCrossing (AsyncFIFO, overrun) -> m_axis (sync)

and the transmit path (``tx`` domain, 125 MHz from the board)::

    s_axis (sync) -> TxFrameCrossing (store and forward in sync, 16-word AsyncFIFO) -> ByteUnpacker
               -> TxFramer (preamble, pad to 60, FCS, 12-byte gap) -> RGMIIOutput (DDR)

Clocks and resets (synchronous, active high): ``clk``/``rst`` (``sync``: the core side,
at least 125 MHz when ``data_width`` is 8, at least 125 MHz * 8 / ``data_width`` in
general), ``rx_clk``/``rx_rst`` (RGMII RXC), ``tx_clk``/``tx_rst``; with ``txc_shift``
also ``tx90_clk``, the transmit clock delayed by 90 degrees, which drives ``rgmii_txc``
(for PHYs without internal TX delay). The three domains are unrelated: every signal that
crosses goes through an AsyncFIFO or a PulseSynchronizer.

Streams (brief section 5; frames without FCS): ``m_axis`` (received frames; ``tuser``
bit 0 on the last beat of a frame with an rx error, runt, bad FCS or overrun; the next
buffer drops such a frame whole) and ``s_axis`` (frames to send; padding and FCS are
added; ``tuser`` on the last beat sends the frame with an inverted FCS).

Counters (32 bit, wrapping, in ``sync``; each received frame counts under exactly one
``stat_rx_*`` reason, see :class:`~.frame_beats.RxStatus`): ``stat_rx_good``,
``stat_rx_error`` (rx_ctl error),
``stat_rx_runt``, ``stat_rx_bad_fcs``, ``stat_rx_overrun`` (frames cut short or dropped
whole because the receive FIFO was full), ``stat_rx_no_sfd`` (a carrier without SFD:
nothing delivered); ``stat_tx_frames`` (frames sent), ``stat_tx_bad`` (of those, sent
poisoned because of ``tuser``), ``stat_tx_underrun`` (frames cut short with ``tx_er``
because their bytes were not there in time). Received frames are counted one clock
after the core takes their last beat, dropped ones one clock after the drop; the transmit counters lag
the wire by the synchroniser (a few ``clk`` cycles).

DDR I/O: ``pins=None`` (the default, and what ``gse export`` builds) uses behavioural
double-data-rate registers with the RGMII pins as ports (``rgmii_rxd``,
``rgmii_rx_ctl``, ``rgmii_txd``, ``rgmii_tx_ctl``, ``rgmii_txc``); a board top passes the
``eth_rgmii`` resource (``platform.request("eth_rgmii", n, dir="-")``) and gets
``io.DDRBuffer`` (IDDRX1F/ODDRX1F on ECP5); it must then clock ``rx`` from the
resource's ``rx_clk`` pin. See :mod:`.ddr_io` and ``docs/mac.md``.
"""

from amaranth.hdl import ClockDomain, DomainRenamer, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import PulseSynchronizer
from amaranth.lib.wiring import In, Out, connect

from ..catalog import BlockSpec
from ..lib.skid_buffer import SkidBuffer
from ..lib.stream import AXIStreamSignature, axis_beat_layout

from .frame_beats import STATUS_WIDTH, RxStatus, byte_layout, word_layout
from .rgmii import RGMIIInput, RGMIIOutput
from .rx_crossing import RxFrameCrossing
from .rx_framer import RxFramer
from .tx_crossing import TxFrameCrossing
from .tx_framer import TxFramer
from .width import BytePacker, ByteUnpacker

__all__ = ["RGMIIMac", "RX_COUNTERS", "TX_COUNTERS", "EXPORTS"]

RX_COUNTERS = ("rx_good", "rx_error", "rx_runt", "rx_bad_fcs", "rx_overrun", "rx_no_sfd")
TX_COUNTERS = ("tx_frames", "tx_bad", "tx_underrun")
_STATUS_COUNTER = {
    RxStatus.OK: "rx_good",
    RxStatus.RX_ERROR: "rx_error",
    RxStatus.RUNT: "rx_runt",
    RxStatus.BAD_FCS: "rx_bad_fcs",
    RxStatus.OVERRUN: "rx_overrun",
}


def _power_of_two(name, value, low, high):
    if not isinstance(value, int) or value < low or value > high or value & (value - 1):
        raise ValueError(f"{name} must be a power of two from {low} to {high}, not {value!r}")


class RGMIIMac(wiring.Component):
    """RGMII MAC. Parameters: ``data_width`` (8..64, core side), ``rx_fifo_bytes`` (the
    receive crossing FIFO) and ``tx_fifo_bytes`` (the transmit store; powers of two),
    ``txc_shift`` (drive
    ``rgmii_txc`` from ``tx90_clk``), ``pins`` (an ``eth_rgmii`` resource, or ``None``
    for the behavioural DDR model)."""

    #: Clock domains besides ``sync``, for the export manifest.
    clock_domains = ("rx", "tx")

    def __init__(self, data_width=64, rx_fifo_bytes=4096, tx_fifo_bytes=4096, txc_shift=0, pins=None):
        _power_of_two("data_width", data_width, 8, 64)
        _power_of_two("rx_fifo_bytes", rx_fifo_bytes, 2 * data_width // 8 * 8, 1 << 20)
        _power_of_two("tx_fifo_bytes", tx_fifo_bytes, 2 * data_width // 8 * 8, 1 << 20)
        if txc_shift not in (0, 1):
            raise ValueError(f"txc_shift must be 0 or 1, not {txc_shift!r}")
        self.data_width = data_width
        self.rx_words = rx_fifo_bytes * 8 // data_width
        self.tx_words = tx_fifo_bytes * 8 // data_width
        self.txc_shift = txc_shift
        self._pins = pins
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
        }
        if pins is None:
            members.update(
                {
                    "rgmii_rxd": In(4),
                    "rgmii_rx_ctl": In(1),
                    "rgmii_txd": Out(4),
                    "rgmii_tx_ctl": Out(1),
                    "rgmii_txc": Out(1),
                }
            )
        if txc_shift:
            members["tx90_clk"] = In(1)
            self.clock_domains = ("rx", "tx", "tx90")
        for name in RX_COUNTERS + TX_COUNTERS:
            members[f"stat_{name}"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        w = self.data_width
        txc_domain = "tx"
        if self.txc_shift:
            m.domains.tx90 = cd_tx90 = ClockDomain("tx90", reset_less=True, local=True)
            m.d.comb += cd_tx90.clk.eq(self.tx90_clk)
            txc_domain = "tx90"

        # Receive: rx domain up to the crossing.
        m.submodules.rgmii_rx = rgmii_rx = RGMIIInput(self._pins, "rx")
        m.submodules.rx_framer = framer = RxFramer("rx")
        m.submodules.rx_packer = packer = BytePacker(w, STATUS_WIDTH, "rx")
        m.submodules.rx_crossing = rx_cdc = RxFrameCrossing(w, self.rx_words, "rx", "sync")
        m.submodules.no_sfd_sync = no_sfd = PulseSynchronizer("rx", "sync")
        if self._pins is None:
            m.d.comb += [rgmii_rx.rgmii_rxd.eq(self.rgmii_rxd), rgmii_rx.rgmii_rx_ctl.eq(self.rgmii_rx_ctl)]
        m.d.comb += [
            framer.rx_dv.eq(rgmii_rx.rx_dv),
            framer.rx_er.eq(rgmii_rx.rx_er),
            framer.rxd.eq(rgmii_rx.rxd),
            packer.i_valid.eq(framer.valid),
            packer.i.eq(framer.beat),
            rx_cdc.i_valid.eq(packer.o_valid),
            rx_cdc.i.eq(packer.o),
            no_sfd.i.eq(framer.no_sfd),
        ]
        connect(m, rx_cdc.m_axis, wiring.flipped(self.m_axis))

        # Transmit: sync domain into the crossing, tx domain after it.
        m.submodules.tx_crossing = tx_cdc = TxFrameCrossing(w, self.tx_words, "sync", "tx")
        m.submodules.tx_unpacker = unpacker = ByteUnpacker(w, 1, "tx")
        m.submodules.tx_framer = tx_framer = TxFramer("tx")
        m.submodules.rgmii_tx = rgmii_tx = RGMIIOutput(self._pins, "tx", txc_domain)
        # A register slice between the FIFO and the unpacker: the unpacker's ready ran
        # into the FIFO's read address, through its LUT RAM, to the unpacker's word
        # register (8.95 ns on the Colorlight core clock). One clock more of latency;
        # the unpacker takes at most one word per clock, the slice moves one.
        tx_slice = DomainRenamer("tx")(SkidBuffer(word_layout(w, 1)))
        m.submodules.tx_slice = tx_slice
        # and one at the input, so that s_axis_tready is a register: the FIFO's write
        # side ran into the source's shift register enables (9.27 ns, Colorlight).
        m.submodules.tx_in_slice = tx_in = SkidBuffer(axis_beat_layout(w), sink="s_axis", source="m_axis")
        connect(m, wiring.flipped(self.s_axis), tx_in.s_axis)
        connect(m, tx_in.m_axis, tx_cdc.s_axis)
        connect(m, tx_cdc.o, tx_slice.s)
        connect(m, tx_slice.m, unpacker.i)
        # and one between the unpacker and the framer: the byte select ran into the
        # framer's CRC update (8.92 ns, 78 % routing). The framer takes a byte per
        # clock and the slice moves one, so a frame still goes out without a gap.
        tx_byte_slice = DomainRenamer("tx")(SkidBuffer(byte_layout(1)))
        m.submodules.tx_byte_slice = tx_byte_slice
        connect(m, unpacker.o, tx_byte_slice.s)
        connect(m, tx_byte_slice.m, tx_framer.i)
        m.d.comb += [
            rgmii_tx.tx_en.eq(tx_framer.tx_en),
            rgmii_tx.tx_er.eq(tx_framer.tx_er),
            rgmii_tx.txd.eq(tx_framer.txd),
        ]
        if self._pins is None:
            m.d.comb += [
                self.rgmii_txd.eq(rgmii_tx.rgmii_txd),
                self.rgmii_tx_ctl.eq(rgmii_tx.rgmii_tx_ctl),
                self.rgmii_txc.eq(rgmii_tx.rgmii_txc),
            ]

        self._counters(m, rx_cdc, no_sfd.o, tx_framer)
        return m

    def _counters(self, m, rx_cdc, no_sfd, tx_framer):
        taken = Signal()
        m.d.comb += taken.eq(self.m_axis.valid & self.m_axis.ready & self.m_axis.payload.last)
        # Each increment is registered before its 32-bit adder, so a counter reads one
        # clock late: the comparison of the receive FIFO's status feeding the carry
        # chain directly was the Colorlight core clock's worst path (8.73 ns).
        for status, name in _STATUS_COUNTER.items():
            stat = getattr(self, f"stat_{name}")
            inc = Signal(2, name=f"{name}_inc")
            more = rx_cdc.dropped if status == RxStatus.OVERRUN else 0
            m.d.sync += inc.eq((taken & (rx_cdc.status == status)) + more)
            m.d.sync += stat.eq(stat + inc)
        m.d.sync += self.stat_rx_no_sfd.eq(self.stat_rx_no_sfd + no_sfd)
        for name in ("sent", "bad", "underrun"):
            sync = PulseSynchronizer("tx", "sync")
            m.submodules[f"tx_{name}_sync"] = sync
            m.d.comb += sync.i.eq(getattr(tx_framer, name))
            stat = getattr(self, "stat_tx_frames" if name == "sent" else f"stat_tx_{name}")
            m.d.sync += stat.eq(stat + sync.o)


EXPORTS = [
    BlockSpec(
        name="rgmii_mac",
        module="gse_rgmii_mac",
        factory=lambda **p: RGMIIMac(**p),
        params={"data_width": 64, "rx_fifo_bytes": 4096, "tx_fifo_bytes": 4096, "txc_shift": 0},
        description="RGMII 1 Gb/s Ethernet MAC (behavioural DDR I/O): AXI-Stream frames "
        "without FCS; preamble, CRC-32, padding, IFG; async FIFO crossings",
        aliases=("mac",),
    )
]
