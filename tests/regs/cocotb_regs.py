"""The register bank of a tagger + parser top, driven by cocotbext-axi's AxiLiteMaster
(random pauses on all five channels) through the Python driver built from the same
description as the bank.

The bench writes configuration that changes the frames (``ingress.node_id`` and
``ingress.ttl``), sends scapy frames (good, spoofed, runt, marked bad, wrong ``len``),
checks every frame and header that leaves against what it sent, and reads the
counters, compared with what a plain-Python count of the sent frames predicts. Also:
reset values, byte strobes, DECERR/SLVERR, a W1C clear, and a 64-bit read across a
carry of its low word."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiResp,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)

from opengse.firmware.regs import AsyncRegisters, RegisterError
from opengse.rtl.regs.description import Access
from opengse.sim.axil_bus import AxilBus
from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.runner import test_params
from opengse.sim.traffic import random_frame
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource
from regs_top import BENCH_FIELDS, EVENT_BAD_FRAME, EVENT_PARSER_DROP, EVENT_SPOOF, top_map

GSE_ETHERTYPE = 0x88B5
ADDR_WIDTH = 12  # the top's bank decodes a 4 KB window (the map needs 256 bytes)
HDR_FIELDS = ("type", "src_node", "dst_node", "port", "ttl", "tenant", "len", "dgsq")


class Bench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        self.cycle = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for ch in (
            self.axil.write_if.aw_channel,
            self.axil.write_if.w_channel,
            self.axil.write_if.b_channel,
            self.axil.read_if.ar_channel,
            self.axil.read_if.r_channel,
        ):
            ch.set_pause_generator(random_pause(self.rng, 0.3))
        self.regmap = top_map(test_params()["data_width"])
        self.bus = AxilBus(self.axil, timeout_us=20)
        self.regs = AsyncRegisters(self.bus, self.regmap)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.hdr_in = FieldStreamSource(dut, "s_hdr", dut.clk, BENCH_FIELDS)
        self.hdr_out = FieldStreamSink(dut, "m_hdr", dut.clk, HDR_FIELDS)
        self.source.set_pause_generator(random_pause(self.rng, 0.2))
        self.sink.set_pause_generator(random_pause(self.rng, 0.3))
        self.hdr_out.set_pause_generator(random_pause(self.rng, 0.3))
        # What the blocks should count, from what was sent (a plain-Python model).
        self.expect = {
            "tagger.frames": 0,
            "tagger.drop_spoof": 0,
            "tagger.drop_runt": 0,
            "tagger.err_frame": 0,
            "parser.frames": 0,
            "parser.drop_ttl": 0,
            "parser.err_len": 0,
            "parser.err_frame": 0,
        }
        self.passing = []  # (frame, bad flag, header) expected at the output

    async def raw_read(self, addr, length):
        """A read straight through the master (any response), bounded."""
        return await with_timeout(self.axil.read(addr, length), 20, "us")

    async def raw_write(self, addr, data):
        return await with_timeout(self.axil.write(addr, data), 20, "us")

    async def start(self):
        cocotb.start_soon(self._count())
        await reset_dut(self.dut)

    async def _count(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    def send(self, ttl, node_id, kind):
        rng = self.rng
        if kind == "runt":
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 14)))
        else:
            raw = random_frame(
                rng,
                rng.choice([14, 60, 61, 64, 127, 256, 1000, 1514]),
                ethertype=GSE_ETHERTYPE if kind == "spoof" else None,
            )
        hdr = {
            "type": 0,
            "flags": rng.randrange(8),
            "tc": rng.randrange(8),
            "tenant": rng.randrange(4096),
            "dst_node": rng.randrange(65536),
            "port": rng.randrange(256),
            "seq": rng.randrange(65536),
            "dgsq": rng.randrange(65536),
            "len": len(raw),
        }
        if kind == "len":
            hdr["len"] = (len(raw) + rng.randrange(1, 100)) % 65536
        bad = kind == "bad"
        self.source.send_nowait(AxiStreamFrame(raw, tuser=[0] * (len(raw) - 1) + [int(bad)]))
        self.hdr_in.send(hdr)
        e = self.expect
        if kind == "runt":
            e["tagger.drop_runt"] += 1
            return
        if kind == "spoof":
            e["tagger.drop_spoof"] += 1
            return
        e["tagger.frames"] += 1
        e["tagger.err_frame"] += bad
        if ttl == 0:
            e["parser.drop_ttl"] += 1
            return
        e["parser.frames"] += 1
        e["parser.err_frame"] += bad
        e["parser.err_len"] += kind == "len"
        self.passing.append((raw, bad or kind == "len", {**hdr, "src_node": node_id, "ttl": ttl}))

    async def drain(self):
        """Receive every expected frame and header and compare; nothing else leaves."""
        await with_timeout(self.source.wait(), 500, "us")
        await with_timeout(self.hdr_in.wait(), 50, "us")
        for raw, flagged, hdr in self.passing:
            got = await with_timeout(self.sink.recv(), 200, "us")
            assert bytes(got.tdata) == raw, "frame out differs from the frame sent"
            tuser = got.tuser[-1] if isinstance(got.tuser, list) else got.tuser
            assert bool(tuser) == flagged, f"tuser {tuser} on the last beat, expected {flagged}"
            side = await with_timeout(self.hdr_out.recv(), 200, "us")
            assert {k: side[k] for k in HDR_FIELDS} == {k: hdr[k] for k in HDR_FIELDS}
        self.passing = []
        for _ in range(200):
            await RisingEdge(self.dut.clk)
        assert self.sink.empty() and self.hdr_out.empty(), "output nobody sent"

    async def check_counters(self):
        for name, want in self.expect.items():
            got = await self.regs.read(name)
            assert got == want, f"{name} reads {got}, the frames sent give {want}"
        for name in ("parser.other", "parser.drop_runt", "parser.drop_ver", "parser.drop_type"):
            assert await self.regs.read(name) == 0, f"{name} counted frames nobody sent"


@cocotb.test()
async def test_uptime_read_is_atomic_across_a_carry(dut):
    """sys.uptime starts 4000 clocks below 2**32. Read it (low word, then high word) until
    it is past the carry; once, just below the carry, wait 128 clocks between the two
    reads. Every value must be from one clock: v = K + t with t within the low word's read,
    for one constant K (a torn read is 2**32 off)."""
    b = Bench(dut, 1)
    await b.start()
    await b.regs.check()
    assert test_params()["uptime_init"] == 2**32 - 4000
    lo_addr = b.regmap.address("sys", "uptime")
    k_lo, k_hi, last, straddled = -(1 << 70), 1 << 70, -1, False
    for _ in range(3000):
        c0 = b.cycle
        lo = await b.bus.read32(lo_addr)
        c1 = b.cycle
        if not straddled and lo >= 2**32 - 64:
            target = b.cycle + 128
            while b.cycle < target:
                await RisingEdge(dut.clk)
            straddled = True
            hi = await b.bus.read32(lo_addr + 4)
            assert hi == 0, "the high word was read live, not from the snapshot of the low read"
        else:
            hi = await b.bus.read32(lo_addr + 4)
        v = hi << 32 | lo
        assert v > last, f"uptime went from {last:#x} to {v:#x}"
        k_lo, k_hi, last = max(k_lo, v - c1), min(k_hi, v - c0), v
        assert k_lo <= k_hi, f"uptime {v:#x} is not the count of one clock (torn read)"
        if v >= 2**32 + 500:
            break
    else:
        assert False, "uptime never passed 2**32 + 500 within 3000 reads"
    assert straddled, "no read straddled the carry"
    v = await b.regs.read("sys.uptime")  # the driver, low word first
    assert v - k_hi <= b.cycle and v >= 2**32 + 500


@cocotb.test()
async def test_configuration_counters_and_errors(dut):
    b = Bench(dut, 2)
    await b.start()
    regs = b.regs
    await regs.check()

    # Reset values from the description, read over the bus.
    for blk, reg in b.regmap.registers():
        if reg.access == Access.RW or reg.const:
            assert await regs.read(f"{blk.name}.{reg.name}") == reg.reset, (
                f"{blk.name}.{reg.name} does not reset to {reg.reset:#x}"
            )
    assert await regs.read("ingress.events") == 0

    # Byte strobes: write byte 1 of sys.scratch alone.
    await regs.write("sys.scratch", 0x11223344)
    scratch = b.regmap.address("sys", "scratch")
    assert (await b.raw_write(scratch + 1, b"\xab")).resp == AxiResp.OKAY
    assert await regs.read("sys.scratch") == 0x1122AB44

    # Errors: unmapped (a hole, above the map) -> DECERR; RO write -> SLVERR. A byte
    # read names its word.
    r = await b.raw_read(scratch + 2, 1)
    assert r.resp == AxiResp.OKAY and r.data == b"\x22"
    hole = b.regmap.address("sys", "scratch") + 4  # between scratch and uptime
    assert hole not in b.regmap.words()
    tagger_gap = b.regmap.address("tagger", "err_frame") + 4
    for addr in (hole, hole + 3, tagger_gap, b.regmap.size, (1 << ADDR_WIDTH) - 4):
        r = await b.raw_read(addr, 1 if addr & 3 else 4)
        assert r.resp == AxiResp.DECERR and not any(r.data), f"read {addr:#x}: {r.resp}"
    r = await b.raw_write(hole, b"\xff\xff\xff\xff")
    assert r.resp == AxiResp.DECERR
    frames_addr = b.regmap.address("tagger", "frames")
    r = await b.raw_write(frames_addr, b"\x05\x00\x00\x00")
    assert r.resp == AxiResp.SLVERR
    assert await regs.read("tagger.frames") == 0, "a refused write changed an RO register"
    try:
        await regs.write("ingress.ttl", 256)
    except RegisterError as exc:
        assert "out of range" in str(exc)
    else:
        assert False, "the driver let a 9-bit value into an 8-bit register"

    # Configuration -> frames: node_id and ttl come from the registers.
    node_id = b.rng.randrange(1, 65536)
    await regs.write("ingress.node_id", node_id)
    assert await regs.read("ingress.node_id") == node_id
    kinds = ["good"] * 40 + ["spoof"] * 5 + ["runt"] * 5 + ["bad"] * 5 + ["len"] * 5
    b.rng.shuffle(kinds)
    for kind in kinds:
        b.send(64, node_id, kind)
    await b.drain()
    await b.check_counters()

    # W1C: spoof and bad-frame flags are set, the parser-drop flag is not.
    assert await regs.read("ingress.events") == EVENT_SPOOF | EVENT_BAD_FRAME
    await regs.clear("ingress.events", 0)  # writing 0 clears nothing
    assert await regs.read("ingress.events") == EVENT_SPOOF | EVENT_BAD_FRAME
    await regs.clear("ingress.events", EVENT_SPOOF)
    assert await regs.read("ingress.events") == EVENT_BAD_FRAME
    await regs.clear("ingress.events")
    assert await regs.read("ingress.events") == 0

    # ttl 0 from the register: the parser drops every frame and counts it.
    await regs.write("ingress.ttl", 0)
    for _ in range(12):
        b.send(0, node_id, "good")
    await b.drain()
    await b.check_counters()
    assert await regs.read("ingress.events") == EVENT_PARSER_DROP

    # Back to a live ttl and another node id: frames pass again, stamped with them.
    node_id = b.rng.randrange(65536)
    await regs.write("ingress.ttl", 9)
    await regs.write("ingress.node_id", node_id)
    for kind in ["good"] * 20 + ["len"] * 2:
        b.send(9, node_id, kind)
    await b.drain()
    await b.check_counters()
    dump = await regs.dump()
    assert dump["parser.frames"] == b.expect["parser.frames"] and dump["ingress.ttl"] == 9
