"""cocotb test of the catalog spine (gse_spine with its AXI4-Lite bank): the forwarding
table and the counters through the register map (rtl/tops/spine_registers.py).

The reference is a plain dict (node -> port) and the bench's own ledger of frames. The
bus master pauses at random on all five channels; the fabric sinks apply random
back-pressure. The bench checks the map's identity (``sys.ident``, ``sys.map_id``
against the description), that after reset every entry reads "no route" (port N),
writes random routes over the bus and reads every entry back, then sends scapy-built
DATA frames to routed and unrouted nodes and checks where each leaves (ttl one lower)
and the counters ``in.frames_in``, ``in.drop_no_route``, ``out.frames_out``,
``out.ctl_out`` read over the bus. A write to an RO register answers SLVERR. Every
wait is bounded and names what it waited for.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, SimTimeoutError, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink
from cocotbext.axi import AxiStreamSource
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from opengse.firmware.regs import AsyncRegisters, RegisterError
from opengse.rtl.catalog import get_block
from opengse.sim.axil_bus import AxilBus
from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE
from opengse.sim.runner import test_params

TIMEOUT_US = 500


async def within(coro, what, us=TIMEOUT_US):
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


def frame(dst_node, serial, rng, typ=0):
    length = rng.choice([64, 100, 200])
    hdr = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=GSE_ETHERTYPE)
    gse = GSE(ver=1, type=typ, dst_node=dst_node, ttl=rng.randrange(1, 256), seq=serial, src_node=1)
    body = serial.to_bytes(4, "big") + bytes(rng.randrange(256) for _ in range(length - 36))
    gse.len = length - 18
    return bytes(hdr / gse / Raw(body))[:length]


@cocotb.test()
async def spine_table_and_counters(dut):
    p = test_params()
    rng = random.Random(23)
    n, nodes = p["ports"], p["nodes"]
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    spec = get_block("spine")
    spine = spec.build(**{**spec.params, **p})  # built for its register map only
    spine._MustUse__silence = True
    bus = AxilBus.over(dut, rng, 0.3)
    regs = AsyncRegisters(bus, spine.regmap)
    srcs = [AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_{i}"), dut.clk, dut.rst) for i in range(n)]
    sinks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{o}"), dut.clk, dut.rst) for o in range(n)]
    for o in range(n):
        sinks[o].set_pause_generator(random_pause(random.Random(rng.random()), 0.3))
        getattr(dut, f"pause_in_{o}").value = 0
    await reset_dut(dut)

    await within(regs.check(), "sys.ident / sys.map_id")
    assert await regs.read("spine.ports") == n
    assert await regs.read("spine.nodes") == nodes

    async def entry(node):
        await regs.write("spine.route_node", node)
        return await regs.read("spine.route_rd_port")

    for node in range(nodes):
        assert await within(entry(node), f"read-back of node {node}") == n, f"node {node} routed after reset"

    table = {}
    for node in rng.sample(range(nodes), nodes - 2):  # two nodes stay unrouted
        port = rng.randrange(n)
        await regs.write("spine.route_node", node)
        await regs.write("spine.route_port", port)
        await regs.write("spine.route_write", 1)
        table[node] = port
    # overwrite one entry, then remove another: the last write wins
    node = next(iter(table))
    table[node] = (table[node] + 1) % n
    await regs.write("spine.route_node", node)
    await regs.write("spine.route_port", table[node])
    await regs.write("spine.route_write", 1)
    gone = list(table)[1]
    await regs.write("spine.route_node", gone)
    await regs.write("spine.route_port", n)
    await regs.write("spine.route_write", 1)
    del table[gone]
    for node in range(nodes):
        got = await within(entry(node), f"read-back of node {node}")
        assert got == table.get(node, n), f"entry {node}: read {got}, wrote {table.get(node, n)}"

    try:
        await bus.write32(spine.regmap.address("in", "frames_in"), 1)
    except RegisterError as exc:
        assert "SLVERR" in str(exc), exc
    else:
        raise AssertionError("a write to in.frames_in (RO) was accepted")

    sent_in, no_route, expect = [0] * n, [0] * n, [[] for _ in range(n)]
    ctl = [0] * n
    for serial in range(40):
        i = rng.randrange(n)
        dst = rng.randrange(nodes)
        typ = rng.choice([0, 0, 0, 1])  # DATA, or a REQUEST (control)
        f = frame(dst, serial, rng, typ)
        sent_in[i] += 1
        if dst in table:
            out = bytearray(f)
            out[23] = (out[23] - 1) & 0xFF
            expect[table[dst]].append(bytes(out))
            ctl[table[dst]] += typ == 1
        else:
            no_route[i] += 1
        await within(srcs[i].send(AxiStreamFrame(f)), f"input {i} taking frame {serial}")
        await ClockCycles(dut.clk, rng.randrange(4))
    for o in range(n):
        got = []
        for k in range(len(expect[o])):
            rx = await within(sinks[o].recv(), f"frame {k} of {len(expect[o])} at output {o}")
            got.append(bytes(rx.tdata))
        # per output, frames of one input keep their order; across inputs they may interleave
        assert sorted(got) == sorted(expect[o]), f"output {o}: frames differ from the table's"
    await ClockCycles(dut.clk, 200)
    for o in range(n):
        assert sinks[o].empty(), f"output {o}: a frame the table does not send there"
    for i in range(n):
        assert await regs.read("in.frames_in", i) == sent_in[i], f"in.frames_in[{i}]"
        assert await regs.read("in.drop_no_route", i) == no_route[i], f"in.drop_no_route[{i}]"
        assert await regs.read("in.drop_overflow", i) == 0, f"in.drop_overflow[{i}]"
    for o in range(n):
        assert await regs.read("out.frames_out", o) == len(expect[o]), f"out.frames_out[{o}]"
        assert await regs.read("out.ctl_out", o) == ctl[o], f"out.ctl_out[{o}]"
    assert sum(no_route) > 0 and all(expect), "the random traffic missed a case"
