"""cocotb bench for RGMIIMac (gse_rgmii_mac, behavioural DDR, txc_shift=1).

The RGMII side is driven by cocotbext-eth: an RgmiiSource on rgmii_rxd/rgmii_rx_ctl
clocked by rx_clk, an RgmiiSink on rgmii_txd/rgmii_tx_ctl clocked by the MAC's own
rgmii_txc (from tx90_clk, 2 ns after tx_clk). The core side is cocotbext-axi. Frames
are scapy Ether frames; the reference model for the wire is zlib.crc32 (FCS) and
plain byte strings (preamble, padding). Every wait is bounded.
"""

import os
import random
import struct
import zlib

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from opengse.sim.cocotb_util import random_pause
from opengse.sim.runner import test_params

PREAMBLE = b"\x55" * 7 + b"\xd5"
IFG_NS = 12 * 8
COUNTERS = (
    "rx_good",
    "rx_error",
    "rx_runt",
    "rx_bad_fcs",
    "rx_overrun",
    "rx_no_sfd",
    "tx_frames",
    "tx_bad",
    "tx_underrun",
)


def fcs(data):
    return struct.pack("<L", zlib.crc32(data))


def scapy_frame(rng, size):
    """A scapy Ether frame of exactly ``size`` bytes (no FCS), random addresses/payload."""

    def mac():
        return ":".join(
            f"{rng.randrange(256) & 0xFE if i == 0 else rng.randrange(256):02x}" for i in range(6)
        )

    payload = bytes(rng.randrange(256) for _ in range(max(0, size - 14)))
    raw = bytes(Ether(dst=mac(), src=mac(), type=0x0800) / Raw(payload))
    assert len(raw) == max(size, 14)
    return raw[:size]


def last_user(frame):
    return frame.tuser[-1] if isinstance(frame.tuser, list) else int(frame.tuser or 0)


class TB:
    def __init__(self, dut, seed):
        self.dut = dut
        self.params = test_params()
        self.width = self.params["data_width"]
        self.rng = random.Random(seed)
        sync_ps = 7000 if self.width == 8 else 6400
        cocotb.start_soon(Clock(dut.clk, sync_ps, unit="ps").start())
        cocotb.start_soon(Clock(dut.rx_clk, 8000, unit="ps").start())
        cocotb.start_soon(Clock(dut.tx_clk, 8000, unit="ps").start())
        cocotb.start_soon(self._tx90())
        self.rgmii_src = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rx_clk, dut.rx_rst)
        self.rgmii_sink = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.rgmii_txc, dut.tx_rst)
        self.axis_src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.axis_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)

    async def _tx90(self):
        await Timer(2000, unit="ps")
        await Clock(self.dut.tx90_clk, 8000, unit="ps").start()

    async def reset(self):
        dut = self.dut
        for r in (dut.rst, dut.rx_rst, dut.tx_rst):
            r.value = 1
        await ClockCycles(dut.clk, 8)
        for r in (dut.rst, dut.rx_rst, dut.tx_rst):
            r.value = 0
        await ClockCycles(dut.clk, 8)

    def core_pauses(self, p_out, p_in=0.0):
        self.axis_sink.set_pause_generator(random_pause(self.rng, p_out) if p_out else None)
        self.axis_src.set_pause_generator(random_pause(self.rng, p_in) if p_in else None)

    async def counters(self):
        await ClockCycles(self.dut.clk, 2)
        return {n: int(getattr(self.dut, f"stat_{n}").value) for n in COUNTERS}

    async def recv_axis(self, what, timeout_us=200):
        try:
            return await with_timeout(self.axis_sink.recv(), timeout_us, "us")
        except Exception as exc:
            raise AssertionError(f"no frame on m_axis within {timeout_us} us ({what})") from exc

    async def recv_rgmii(self, what, timeout_us=200):
        try:
            return await with_timeout(self.rgmii_sink.recv(), timeout_us, "us")
        except Exception as exc:
            raise AssertionError(f"no frame on rgmii_txd within {timeout_us} us ({what})") from exc

    async def expect_quiet(self, us=5):
        await Timer(us, unit="us")
        assert self.axis_sink.empty(), f"unexpected frame on m_axis: {self.axis_sink.recv_nowait()}"
        assert self.rgmii_sink.empty(), f"unexpected frame on rgmii: {self.rgmii_sink.recv_nowait()}"


def check_wire_frame(rx, sent, poisoned=False):
    """A frame from the RGMII sink against the frame the core sent."""
    assert rx.get_preamble() == PREAMBLE, f"preamble {rx.get_preamble().hex()}"
    assert not (rx.error and any(rx.error)), "tx_er asserted"
    body = bytes(rx.get_payload(strip_fcs=True))
    padded = sent + bytes(max(0, 60 - len(sent)))
    assert body == padded, f"payload differs: sent {len(sent)} B, got {len(body)} B"
    good = bytes(rx.get_fcs()) == fcs(padded)
    assert good == (not poisoned), (
        f"FCS {'good' if good else 'bad'} on a {'poisoned' if poisoned else 'normal'} frame"
    )
    assert rx.check_fcs() == (not poisoned)


@cocotb.test()
async def every_size_full_duplex_line_rate(dut):
    """Every frame size from 60 to 1514 bytes (a stride at 8 bits) in both directions at
    once, back to back at the minimum IFG: nothing dropped, byte-exact, and the TX gap is
    exactly 12 bytes when frames are queued."""
    tb = TB(dut, seed=1)
    await tb.reset()
    p_out = 0.3 if tb.width == 64 else 0.0  # at 64 bits the core keeps up even so
    tb.core_pauses(p_out)
    stride = int(os.environ.get("MAC_SIZE_STRIDE", "1"))
    sizes = list(range(60, 1515, stride))
    if 1514 not in sizes:
        sizes.append(1514)
    rx_frames = [scapy_frame(tb.rng, n) for n in sizes]
    tx_frames = [scapy_frame(tb.rng, n) for n in reversed(sizes)]

    async def feed_tx():
        for f in tx_frames:
            await tb.axis_src.send(AxiStreamFrame(f))

    cocotb.start_soon(feed_tx())
    for f in rx_frames:
        tb.rgmii_src.send_nowait(GmiiFrame.from_payload(f))

    prev_end = None
    gaps = []
    for k in range(len(sizes)):
        got = await tb.recv_axis(f"rx frame {k} of {len(sizes)}, {len(rx_frames[k])} B")
        assert bytes(got.tdata) == rx_frames[k], f"rx frame {k} ({len(rx_frames[k])} B) differs"
        assert last_user(got) == 0, f"rx frame {k} flagged"
        rx = await tb.recv_rgmii(f"tx frame {k}")
        check_wire_frame(rx, tx_frames[k])
        if prev_end is not None:
            gaps.append(rx.sim_time_start - prev_end)
        prev_end = rx.sim_time_end
    # sim times are in simulator steps (ps here)
    assert min(gaps) >= IFG_NS * 1000, f"IFG below 12 bytes: {min(gaps)} ps"
    assert max(gaps) == IFG_NS * 1000, f"TX not back to back at line rate: gaps up to {max(gaps)} ps"
    await tb.expect_quiet()
    c = await tb.counters()
    assert c == dict.fromkeys(COUNTERS, 0) | {"rx_good": len(sizes), "tx_frames": len(sizes)}, c


def bad_frame(tb, kind):
    """(GmiiFrame to send, expected m_axis bytes or None, expected tuser, counter)."""
    rng = tb.rng
    if kind == "good":
        f = scapy_frame(rng, rng.randint(60, 300))
        return GmiiFrame.from_payload(f), f, 0, "rx_good"
    if kind == "bad_fcs":
        f = scapy_frame(rng, rng.randint(60, 300))
        wrong = bytearray(fcs(f))
        wrong[rng.randrange(4)] ^= 1 << rng.randrange(8)
        return GmiiFrame.from_raw_payload(f + bytes(wrong)), f, 1, "rx_bad_fcs"
    if kind == "runt":  # good FCS, fewer than 64 bytes with it
        f = scapy_frame(rng, rng.randint(1, 59))
        return GmiiFrame.from_payload(f, min_len=0), f, 1, "rx_runt"
    if kind == "runt_bad_fcs":
        f = scapy_frame(rng, rng.randint(1, 59))
        return GmiiFrame.from_raw_payload(f + b"\0\0\0\0"), f, 1, "rx_runt"
    if kind == "tiny":  # 1..4 bytes after the SFD: one flagged beat
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 4)))
        return GmiiFrame.from_raw_payload(raw), b"\0", 1, "rx_runt"
    if kind == "rx_error":  # rx_ctl error on one byte of the frame
        f = scapy_frame(rng, rng.randint(60, 300))
        g = GmiiFrame.from_payload(f)
        g.normalize()
        g.error[rng.randrange(8, len(g.data))] = 1
        return g, f, 1, "rx_error"
    if kind == "no_sfd":  # carrier with preamble only: nothing out
        return GmiiFrame(b"\x55" * rng.randint(1, 7)), None, None, "rx_no_sfd"
    raise ValueError(kind)


@cocotb.test()
async def rx_bad_frames(dut):
    """Bad FCS, runts (good and bad FCS), tiny frames, rx_ctl errors and carriers without
    SFD mixed with good frames, back to back, random back-pressure: each bad frame leaves
    whole with tuser on its last beat (or not at all, without SFD) and is counted under
    its reason; the good frames around it are intact."""
    tb = TB(dut, seed=2)
    await tb.reset()
    tb.core_pauses(0.2 if tb.width == 64 else 0.0)
    kinds = ["good", "bad_fcs", "runt", "runt_bad_fcs", "tiny", "rx_error", "no_sfd"]
    expected, counts = [], dict.fromkeys(COUNTERS, 0)
    for k in range(300):
        kind = "good" if k % 2 == 0 else tb.rng.choice(kinds)
        g, data, user, counter = bad_frame(tb, kind)
        tb.rgmii_src.send_nowait(g)
        counts[counter] += 1
        if data is not None:
            expected.append((kind, data, user))
    for k, (kind, data, user) in enumerate(expected):
        got = await tb.recv_axis(f"frame {k} ({kind})")
        assert last_user(got) == user, f"frame {k} ({kind}): tuser {last_user(got)}, expected {user}"
        assert bytes(got.tdata) == data, f"frame {k} ({kind}) differs"
        if isinstance(got.tuser, list):  # one entry per byte: the last beat's are set
            in_last = (len(data) - 1) % (tb.width // 8) + 1
            assert not any(got.tuser[:-in_last]), f"frame {k} ({kind}): tuser before the last beat"
    await tb.expect_quiet()
    c = await tb.counters()
    assert c == counts, f"counters {c}, expected {counts}"


@cocotb.test()
async def rx_overrun_then_recovery(dut):
    """The core stops taking frames while full-size frames arrive at line rate: the FIFO
    fills, frames are cut (tuser, OVERRUN) or dropped whole, all counted; nothing good
    is corrupted; once the core takes again, the next frames arrive intact."""
    tb = TB(dut, seed=3)
    await tb.reset()
    tb.axis_sink.pause = True
    burst = [scapy_frame(tb.rng, 1514) for _ in range(8)]
    for f in burst:
        tb.rgmii_src.send_nowait(GmiiFrame.from_payload(f))
    await with_timeout(tb.rgmii_src.wait(), 500, "us")
    await Timer(2, unit="us")
    tb.axis_sink.pause = False
    good, cut = [], 0
    while True:
        try:
            got = await with_timeout(tb.axis_sink.recv(), 20, "us")
        except Exception:
            break
        if last_user(got):
            cut += 1
            data = bytes(got.tdata)[:-1]
            assert any(f.startswith(data) for f in burst), "overrun frame is not a cut sent frame"
        else:
            good.append(bytes(got.tdata))
    # good frames are sent frames, in order
    it = iter(burst)
    assert all(any(g == f for f in it) for g in good), "a delivered good frame was corrupted"
    c = await tb.counters()
    assert c["rx_good"] == len(good) and c["rx_overrun"] + len(good) == len(burst), c
    assert c["rx_overrun"] >= cut and c["rx_overrun"] > 0, f"no overrun counted: {c}"
    # recovery: the next frames are fine
    after = [scapy_frame(tb.rng, tb.rng.randint(60, 1514)) for _ in range(6)]
    for f in after:
        tb.rgmii_src.send_nowait(GmiiFrame.from_payload(f))
    for k, f in enumerate(after):
        got = await tb.recv_axis(f"frame {k} after the overrun")
        assert bytes(got.tdata) == f and last_user(got) == 0, f"frame {k} after the overrun"
    await tb.expect_quiet()


@cocotb.test()
async def tx_padding_poison_and_gaps(dut):
    """Frames of 1..200 bytes from the core with random idle cycles and some with tuser:
    on the wire each has the preamble, zero padding to 60, an FCS that is correct
    (inverted for tuser frames), and at least 12 idle bytes before the next."""
    tb = TB(dut, seed=4)
    await tb.reset()
    tb.core_pauses(0.0, p_in=0.3)
    sent = []
    for k in range(120):
        size = tb.rng.choice([tb.rng.randint(1, 64), tb.rng.randint(60, 200)])
        f = scapy_frame(tb.rng, size) if size >= 14 else bytes(tb.rng.randrange(256) for _ in range(size))
        poisoned = tb.rng.random() < 0.15
        tuser = [0] * (len(f) - 1) + [1] if poisoned else 0
        tb.axis_src.send_nowait(AxiStreamFrame(f, tuser=tuser))
        sent.append((f, poisoned))
    prev_end = None
    for k, (f, poisoned) in enumerate(sent):
        rx = await tb.recv_rgmii(f"tx frame {k} ({len(f)} B)")
        check_wire_frame(rx, f, poisoned)
        if prev_end is not None:
            assert rx.sim_time_start - prev_end >= IFG_NS * 1000, f"frame {k}: IFG too short"
        prev_end = rx.sim_time_end
    await tb.expect_quiet()
    c = await tb.counters()
    n_bad = sum(p for _f, p in sent)
    assert (c["tx_frames"], c["tx_bad"], c["tx_underrun"]) == (len(sent), n_bad, 0), c


@cocotb.test()
async def jumbo_both_directions(dut):
    """Jumbo frames up to 9000 bytes, longer than the 4096-byte FIFOs: received
    cut-through, and sent cut-through once the transmit FIFO is full (the core keeps
    up): byte-exact both ways, correct FCS, nothing counted as bad."""
    tb = TB(dut, seed=5)
    await tb.reset()
    sizes = [1515, 4000, 4097, 6000, 9000]
    rx_frames = [scapy_frame(tb.rng, n) for n in sizes]
    tx_frames = [scapy_frame(tb.rng, n) for n in sizes]
    for f in rx_frames:
        tb.rgmii_src.send_nowait(GmiiFrame.from_payload(f))
    for f in tx_frames:
        tb.axis_src.send_nowait(AxiStreamFrame(f))
    for k, n in enumerate(sizes):
        got = await tb.recv_axis(f"jumbo rx frame {k} ({n} B)", timeout_us=400)
        assert bytes(got.tdata) == rx_frames[k] and last_user(got) == 0, f"jumbo rx frame {n} B"
        rx = await tb.recv_rgmii(f"jumbo tx frame {k} ({n} B)", timeout_us=400)
        check_wire_frame(rx, tx_frames[k])
    await tb.expect_quiet()
    c = await tb.counters()
    assert c == dict.fromkeys(COUNTERS, 0) | {"rx_good": len(sizes), "tx_frames": len(sizes)}, c
