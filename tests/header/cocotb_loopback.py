"""Tag -> parse -> untag identity: the RTL parser restores exactly what the RTL tagger
was given, and hands back exactly the header fields it was given."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause
from opengse.sim.runner import test_params
from opengse.sim.traffic import frame_sizes, random_frame
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource

TAG_FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
SIDE_FIELDS = TAG_FIELDS + ("ver", "next_type", "gse", "eth_dst", "eth_src", "eth_type")


@cocotb.test()
async def test_identity(dut):
    rng = random.Random(21)
    width = test_params()["data_width"]
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    hdr_in = FieldStreamSource(dut, "s_hdr", dut.clk, TAG_FIELDS)
    hdr_out = FieldStreamSink(dut, "m_hdr", dut.clk, SIDE_FIELDS)
    source.set_pause_generator(random_pause(rng, 0.2))
    hdr_in.set_pause_generator(random_pause(rng, 0.2))
    sink.set_pause_generator(random_pause(rng, 0.3))
    hdr_out.set_pause_generator(random_pause(rng, 0.3))
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    sent = []
    for size in frame_sizes(rng, 80, big_share=0.1 if width >= 32 else 0.02):
        raw = random_frame(rng, size)
        hdr = {
            "type": rng.choice([0, 0, 1, 2, 3]),
            "flags": rng.randrange(8),
            "tc": rng.randrange(8),
            "tenant": rng.randrange(4096),
            "src_node": rng.randrange(65536),
            "dst_node": rng.randrange(65536),
            "port": rng.randrange(256),
            "ttl": rng.randrange(1, 256),
            "seq": rng.randrange(65536),
            "dgsq": rng.randrange(65536),
        }
        hdr["len"] = len(raw) if hdr["type"] == 0 else rng.randrange(65536)
        source.send_nowait(AxiStreamFrame(raw))
        hdr_in.send(hdr)
        sent.append((raw, hdr))
    for raw, hdr in sent:
        got = await sink.recv()
        assert bytes(got.tdata) == raw, "untagged frame differs from the original"
        side = await hdr_out.recv()
        assert {k: side[k] for k in TAG_FIELDS} == hdr
        assert side["ver"] == 1 and side["gse"] == 1 and side["eth_type"] == 0x88B5
        assert side["next_type"] == int.from_bytes(raw[12:14], "big")
        assert side["eth_dst"] == int.from_bytes(raw[0:6], "big")
        assert not (got.tuser[-1] if isinstance(got.tuser, list) else got.tuser)
    for _ in range(50):
        await RisingEdge(dut.clk)
    assert sink.empty() and hdr_out.empty()
