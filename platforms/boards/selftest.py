"""Self-test top: RTL traffic through the board's RGMII ports and a cable, verdict on an LED.

For every RGMII port ``p`` of the board (:class:`~.rgmii_port.RGMIIPort`)::

    TrafficGenerator(host p+1) -> MAC p TX ==cable==> MAC q RX -> TrafficChecker(host q+1)

On the Colorlight 5A-75B a cable joins port 0 and port 1 (each port's frames arrive at
the other: q = 1 - p); on a one-port board (ECPIX-5) a loopback plug returns a port's
frames to itself (q = p). The generator of port ``p`` sends to the host of the port
its frames arrive at, so each checker sees only its peer's flows.

Configuration (tied to constants; :mod:`opengse.rtl.tb.traffic_gen` for the meaning):
``flows`` 4 (the whole destination table, written by a reset-time init: flow i -> the
peer host), random flows, frames of 60..1514 bytes uniformly, offered at full rate
(``rate`` 65536; the MAC's store-and-forward FIFO paces it to line rate), tenant 0,
tc 0, a seed per port. Traffic starts 4.3 s after reset
(:class:`~.startup.StartupSequencer`), once the links are up.

Verdict (:class:`~.status_led.StatusLED`): an error is any non-zero count of the
checkers' ``lost``, ``corrupt``, ``bad``, ``foreign``, ``duplicate``, ``late`` or the
MACs' ``rx_error``, ``rx_runt``, ``rx_bad_fcs``, ``rx_overrun``, ``tx_underrun``;
progress is the sum of the checkers' good frames. Everything runs in ``sync`` at 125 MHz
(:class:`~.clocking.BoardClocks`); each port has its own ``rx<p>`` domain.

Parameters: ``board`` (:class:`~.board.Board`), ``data_width`` (the MACs' core side and
the traffic gear: 32, docs/boards.md says why), ``fifo_bytes`` (each MAC crossing FIFO:
64 bytes, 16 words, in LUT RAM: a block RAM's 5.8 ns clock-to-output on the -6 25F
feeding the MAC's counters missed 125 MHz; the checkers always accept and the
generators run at four times the line rate, so neither FIFO needs depth),
``start_cycles`` / ``phy_reset_cycles`` (shorter in simulation).
"""

from amaranth.hdl import Const, Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.lib.wiring import connect

from opengse.rtl.tb.traffic_check import TrafficChecker
from opengse.rtl.tb.traffic_gen import RATE_ONE, TrafficGenerator

from .clocking import BoardClocks
from .rgmii_port import RGMIIPort, rx_clock_preferences
from .startup import StartupSequencer
from .status_led import StatusLED

__all__ = ["SelfTestTop", "ERROR_COUNTERS"]

FLOWS = 4
#: (part, counter) pairs whose non-zero value is an error.
ERROR_COUNTERS = (
    ("check", "lost"),
    ("check", "corrupt"),
    ("check", "bad"),
    ("check", "foreign"),
    ("check", "duplicate"),
    ("check", "late"),
    ("mac", "rx_error"),
    ("mac", "rx_runt"),
    ("mac", "rx_bad_fcs"),
    ("mac", "rx_overrun"),
    ("mac", "tx_underrun"),
)


def drive_led(m, platform, spec, value, name):
    """Light the LED ``spec`` = (resource, number, subsignal or None) with ``value``."""
    resource, number, sub = spec
    pins = platform.request(resource, number, dir="-")
    m.submodules[name] = buf = io.Buffer("o", getattr(pins, sub) if sub else pins)
    m.d.comb += buf.o.eq(value)


class SelfTestTop(Elaboratable):
    """Board self-test (see the module docstring)."""

    def __init__(self, board, data_width=32, fifo_bytes=64, start_cycles=1 << 29, phy_reset_cycles=1 << 20):
        self.board, self.data_width, self.fifo_bytes = board, data_width, fifo_bytes
        self.start_cycles, self.phy_reset_cycles = start_cycles, phy_reset_cycles

    def lpf_preferences(self):
        """Extra LPF lines: the RGMII receive clocks."""
        return rx_clock_preferences(self.board.rgmii_ports)

    def peer(self, i):
        """The index (into the board's ports) of the port that port ``i``'s cable reaches."""
        n = len(self.board.rgmii_ports)
        return i if n == 1 else (i + 1) % n if n == 2 else i

    def elaborate(self, platform):
        m = Module()
        board, w = self.board, self.data_width
        m.submodules.clocks = clocks = BoardClocks(
            board.clk, board.f_osc, board.rst, tx90=bool(board.txc_shift)
        )
        m.domains += clocks.domains()
        m.submodules.startup = startup = StartupSequencer(self.phy_reset_cycles, self.start_cycles)
        ports = []
        for i, p in enumerate(board.rgmii_ports):
            port = RGMIIPort(
                p,
                w,
                rx_fifo_bytes=self.fifo_bytes,
                tx_fifo_bytes=self.fifo_bytes,
                txc_shift=board.txc_shift,
                phy_pins=(i == 0 or not board.shared_phy_pins),
            )
            port.create_mac(platform)
            m.submodules[f"port{p}"] = port
            m.d.comb += port.phy_reset.eq(startup.phy_reset)
            ports.append(port)

        errors, progress = [], Const(0, 32)
        for i, port in enumerate(ports):
            gen = m.submodules[f"gen{i}"] = TrafficGenerator(w, max_flows=FLOWS)
            chk = m.submodules[f"check{i}"] = TrafficChecker(w, sources=4, flows=FLOWS, tenants=2, bins=2)
            self._configure(
                m, gen, host=i + 1, dst=self.peer(i) + 1, seed=0x1234_5677 + i, start=startup.start
            )
            connect(m, gen.m_axis, port.mac.s_axis)
            connect(m, port.mac.m_axis, chk.s_axis)
            m.d.comb += chk.host.eq(i + 1)
            parts = {"check": chk, "mac": port.mac}
            for part, name in ERROR_COUNTERS:
                # each counter's "not zero" registered, then the OR of the flags: the OR
                # over every counter's bits in one clock was the core clock's worst path
                nonzero = Signal(name=f"err{i}_{part}_{name}")
                m.d.sync += nonzero.eq(getattr(parts[part], f"stat_{name}") != 0)
                errors.append(nonzero)
            progress = progress + chk.stat_good_frames
        m.submodules.status = status = StatusLED()
        any_error = Signal()
        m.d.sync += any_error.eq(_any(errors))
        progress_r = Signal(32)  # the sum of the checkers' counters, one clock late
        m.d.sync += progress_r.eq(progress)
        m.d.comb += [
            status.start.eq(startup.start),
            status.error.eq(any_error),
            status.progress.eq(progress_r),
        ]
        drive_led(m, platform, board.led, status.led, "status_led")
        if board.error_led:
            drive_led(m, platform, board.error_led, status.failed, "error_led")
        return m

    @staticmethod
    def _configure(m, gen, host, dst, seed, start):
        """Constant configuration and a reset-time init of the destination table: flow i
        -> ``dst`` for every flow; the generator is enabled once the table is written and
        ``start`` is 1."""
        index = Signal(range(FLOWS + 1))
        done = Signal()
        m.d.comb += [
            gen.s_dst.valid.eq(~done),
            gen.s_dst.payload.index.eq(index),
            gen.s_dst.payload.dst.eq(dst),
        ]
        with m.If(gen.s_dst.valid & gen.s_dst.ready):
            m.d.sync += index.eq(index + 1)
            with m.If(index == FLOWS - 1):
                m.d.sync += done.eq(1)
        enable = Signal()  # registered: it fans out into the generator's frame start
        m.d.sync += enable.eq(done & start)
        m.d.comb += [
            gen.enable.eq(enable),
            gen.host.eq(host),
            gen.frame_min.eq(60),
            gen.frame_max.eq(1514),
            gen.rate.eq(RATE_ONE),
            gen.flows.eq(FLOWS),
            gen.random.eq(1),
            gen.tenant.eq(0),
            gen.tc.eq(0),
            gen.seed.eq(seed),
            gen.pause.eq(0),
        ]


def _any(bits):
    out = Const(0, 1)
    for b in bits:
        out = out | b
    return out
