"""cocotb tests of the REQUEST/GRANT frame encoder and decoder against the scapy
``GSE`` layer (opengse.sim.gse_scapy, written from the brief independently of the RTL).

The same module serves both blocks: it looks at the DUT's ports to know which one.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.l2 import Ether

from opengse.sim.gse_scapy import GSE, control_frame
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource

FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
DA, SA = "02:00:00:00:00:02", "02:00:00:00:00:01"


def _pauses(rng, p):
    while True:
        yield int(rng.random() < p)


def _random_fields(rng, kind=None):
    f = {
        "type": kind if kind is not None else rng.choice((1, 2)),
        "flags": 0,
        "tc": rng.randrange(8),
        "tenant": rng.randrange(4096),
        "src_node": rng.randrange(65536),
        "dst_node": rng.randrange(65536),
        "port": rng.randrange(256),
        "ttl": rng.randrange(1, 256),
        "seq": rng.randrange(65536),
        "len": rng.randrange(65536),
        "dgsq": rng.randrange(65536),
    }
    return f


async def _reset(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


@cocotb.test()
async def test_frames(dut):
    rng = random.Random(41)
    await _reset(dut)
    if hasattr(dut, "s_ctl_valid"):
        # Encoder: header fields in, 60-byte frames out.
        dut.mac_da.value = int(DA.replace(":", ""), 16)
        dut.mac_sa.value = int(SA.replace(":", ""), 16)
        src = FieldStreamSource(dut, "s_ctl", dut.clk, fields=FIELDS)
        sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        sink.set_pause_generator(_pauses(rng, 0.3))
        sent = []
        for _ in range(200):
            f = _random_fields(rng)
            sent.append(f)
            src.send(f)
        for f in sent:
            rx = await sink.recv()
            raw = bytes(rx.tdata)
            kind = {1: "REQUEST", 2: "GRANT"}[f["type"]]
            want = control_frame(kind, dst=DA, src=SA, **{k: v for k, v in f.items() if k != "type"})
            assert raw == want, f"{raw.hex()} != {want.hex()}"
            assert len(raw) == 60
        for _ in range(4):
            await RisingEdge(dut.clk)
        assert sink.empty()
        assert int(dut.stat_frames.value) == len(sent)
        return
    # Decoder: frames in, REQUEST/GRANT header fields out; others dropped and counted.
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    src.set_pause_generator(_pauses(rng, 0.2))
    sink = FieldStreamSink(dut, "m_ctl", dut.clk, fields=FIELDS)
    sink.set_pause_generator(_pauses(rng, 0.5))
    expect, counts = [], {"ctl": 0, "other": 0, "malformed": 0, "err": 0}
    for _ in range(300):
        f = _random_fields(rng)
        case = rng.choice(
            ["ok"] * 5 + ["data", "probe", "ver", "type", "ttl0", "short", "ipv4", "err", "long"]
        )
        kind = {1: "REQUEST", 2: "GRANT"}[f["type"]]
        raw = control_frame(kind, dst=DA, src=SA, **{k: v for k, v in f.items() if k != "type"})
        user = 0
        if case == "data":
            raw = raw[:14] + bytes([0x10]) + raw[15:]
            counts["other"] += 1
        elif case == "probe":
            raw = raw[:14] + bytes([0x13]) + raw[15:]
            counts["other"] += 1
        elif case == "ver":
            raw = raw[:14] + bytes([0x20 | f["type"]]) + raw[15:]
            counts["malformed"] += 1
        elif case == "type":
            raw = raw[:14] + bytes([0x10 | rng.randrange(4, 16)]) + raw[15:]
            counts["malformed"] += 1
        elif case == "ttl0":
            raw = raw[:23] + bytes([0]) + raw[24:]
            counts["malformed"] += 1
        elif case == "short":
            raw = raw[: rng.randrange(14, 32)]
            counts["malformed"] += 1
        elif case == "ipv4":
            raw = raw[:12] + b"\x08\x00" + raw[14:]
            counts["other"] += 1
        elif case == "err":
            user = 1
            counts["err"] += 1
        else:
            if case == "long":
                raw = raw + bytes(rng.randrange(1, 100))
            counts["ctl"] += 1
            g = GSE(bytes(Ether(raw).payload)[:18])
            expect.append({k: int(getattr(g, k)) for k in FIELDS})
        await src.send(AxiStreamFrame(raw, tuser=user))
    for want in expect:
        got = await sink.recv()
        assert got == want, f"{got} != {want}"
    for _ in range(50):
        await RisingEdge(dut.clk)
    assert sink.empty()
    for name, n in counts.items():
        stat = "stat_ctl" if name == "ctl" else f"stat_drop_{name}"
        assert int(getattr(dut, stat).value) == n, f"{stat} {int(getattr(dut, stat).value)} != {n}"
