"""cocotb module of ``test_watchdog.py``: a tagger that is made to stall, to show that
a stuck DUT fails its test with a message instead of hanging. Each test is run on its
own by the pytest side (they are meant to fail, except ``free_flowing``)."""

import random

import cocotb
from cocotb.clock import Clock
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import recv_within, reset_dut, within
from opengse.sim.gse_scapy import tag
from opengse.sim.traffic import random_frame
from opengse.sim.valid_ready import FieldStreamSource

HDR = {
    "type": 0,
    "flags": 0,
    "tc": 0,
    "tenant": 0,
    "src_node": 1,
    "dst_node": 2,
    "port": 0,
    "ttl": 64,
    "seq": 0,
    "dgsq": 0,
}


async def _tagger(dut, ready=True):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    hdr = FieldStreamSource(dut, "s_hdr", dut.clk, tuple(HDR) + ("len",))
    sink.pause = not ready  # m_axis_tready held low: the tagger cannot emit
    await reset_dut(dut)
    return source, sink, hdr


def _send(source, hdr, frame):
    source.send_nowait(AxiStreamFrame(frame))
    hdr.send(dict(HDR, len=len(frame)))


@cocotb.test()
async def free_flowing(dut):
    """The control: with tready free, the bounded receive returns the tagged frame."""
    source, sink, hdr = await _tagger(dut)
    frame = random_frame(random.Random(1), 100)
    _send(source, hdr, frame)
    await within(dut.clk, "s_axis to take frame 1", source.wait(), clocks=2000)
    got = await recv_within(sink, "frame 1", clocks=2000)
    assert bytes(got.tdata) == bytes(tag(frame, len=len(frame), **HDR))


@cocotb.test()
async def stuck_bounded_recv(dut):
    """tready low: the bounded receive gives up after 2000 clocks, naming the frame."""
    source, sink, hdr = await _tagger(dut, ready=False)
    _send(source, hdr, random_frame(random.Random(1), 100))
    await recv_within(sink, "frame 1", clocks=2000)


@cocotb.test()
async def stuck_within(dut):
    """tready low: ``within`` gives up on a plain ``recv()`` after 500 clocks."""
    source, sink, hdr = await _tagger(dut, ready=False)
    _send(source, hdr, random_frame(random.Random(1), 100))
    await within(dut.clk, "the tagged frame on m_axis", sink.recv(), clocks=500)


@cocotb.test()
async def stuck_unbounded_recv(dut):
    """tready low and a plain, unbounded ``recv()``: only the runner's simulated-time
    limit ends this test."""
    source, sink, hdr = await _tagger(dut, ready=False)
    _send(source, hdr, random_frame(random.Random(1), 100))
    await sink.recv()


@cocotb.test()
async def never_sent(dut):
    """A header with no frame behind it: the tagger holds it, and the source's bounded
    ``wait()`` names the port that never took it."""
    source, sink, hdr = await _tagger(dut)
    hdr.send(dict(HDR, len=100))
    hdr.send(dict(HDR, len=100))
    await hdr.wait(timeout=1000)
