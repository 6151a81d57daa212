"""cocotb test of the catalog leaf (gse_leaf, 2 x 2, GSE mode) over its AXI4-Lite
register map: each host port's VOQ query port (``h<p>_in.voq_query_*``).

No uplink is looped back, so no GRANT ever arrives: the frames host 0 sends stay in
its VOQ buffer. The bench configures the leaf (destination table, tenant and class of
each host port), sends scapy-built frames from host 0 to a remote node, and then reads
through the bus, for every queue and every tenant of both host ports, what the query
port shows. The reference is the bench's ledger and the VOQ's own counters (plain
reads of ``voq_enq_pkts``, ``voq_deq_pkts``, ``voq_queued_cells``): the queue the
frames went to holds them all (packets, bytes of the tagged frames, cells), every other
queue and host 1 hold nothing, the tenant of host 0 holds all the cells, and no drop is
counted. The per-queue and per-tenant drop counts (the VOQ's drop tables) read 0: the
leaf's admission gate never lets its VOQ buffer drop (docs/leaf.md), so no input at the
leaf's ports can raise them. Every wait is bounded.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink
from cocotbext.axi import AxiStreamSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from opengse.firmware.regs import AsyncRegisters, RegisterError
from opengse.rtl.catalog import get_block
from opengse.sim.axil_bus import AxilBus
from opengse.sim.cocotb_util import reset_dut
from opengse.sim.runner import test_params

#: Bytes the tagger adds to a frame: the GSE header after the Ethernet header.
TAG_BYTES = 18
DST_MAC = "02:00:00:00:00:05"
DST_NODE = 5  # a node of another leaf (this leaf's host ports are nodes 0 and 1)
TENANT = 3


def frame(size, rng):
    head = Ether(dst=DST_MAC, src="02:00:00:00:00:00") / IP(src="10.0.0.0", dst="10.0.0.5", proto=17)
    head = head / UDP(sport=49152, dport=4791)
    return bytes(head / Raw(bytes(rng.getrandbits(8) for _ in range(max(0, size - len(head))))))


async def query(regs, port, queue=None, tenant=None):
    """The VOQ query registers of host port ``port`` for ``queue`` or ``tenant``."""
    blk = f"h{port}_in"
    if queue is not None:
        await regs.write(f"{blk}.voq_query_queue", queue)
        names = ("pkts", "bytes", "cells", "drops")
    else:
        await regs.write(f"{blk}.voq_query_tenant", tenant)
        names = ("tenant_cells", "tenant_drops")
    return {n: await regs.read(f"{blk}.voq_query_{n}") for n in names}


@cocotb.test()
async def leaf_voq_query(dut):
    p = test_params()
    rng = random.Random(19)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    spec = get_block("leaf")
    leaf = spec.build(**{**spec.params, **p})  # built for its register map only
    leaf._MustUse__silence = True
    H, U = leaf.config.host_ports, leaf.config.uplinks
    Q, T = leaf.config.queues, leaf.config.tenants
    regs = AsyncRegisters(AxilBus.over(dut, rng, 0.3), leaf.regmap)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_host_0"), dut.clk, dut.rst)
    # PROBEs and REQUESTs leave on the uplinks into sinks (nothing comes back)
    outs = [f"m_axis_fab_{u}" for u in range(U)] + [f"m_axis_host_{q}" for q in range(H)]
    sinks = {n: AxiStreamSink(AxiStreamBus.from_prefix(dut, n), dut.clk, dut.rst) for n in outs}
    dut.link_up.value = (1 << U) - 1
    for q in range(H):
        getattr(dut, f"host_pause_in_{q}").value = 0
        getattr(dut, f"s_axis_host_{q}_tvalid").value = 0
    for u in range(U):
        getattr(dut, f"fab_pause_in_{u}").value = 0
        getattr(dut, f"s_axis_fab_{u}_tvalid").value = 0
    await reset_dut(dut)

    await regs.check()
    await regs.write("leaf.node_base", 0)
    for q in range(H):
        await regs.write("leaf.host_tc", 1, q)
        await regs.write("leaf.host_tenant", TENANT if q == 0 else 0, q)
    await regs.write("leaf.dest_index", 0)
    await regs.write("leaf.dest_mac", int.from_bytes(bytes(int(b, 16) for b in DST_MAC.split(":")), "little"))
    await regs.write("leaf.dest_node", DST_NODE)
    await regs.write("leaf.dest_port", 0)
    await regs.write("leaf.dest_valid", 1)
    await regs.write("leaf.dest_write", 1)

    # before any frame: every queue and tenant empty, nothing dropped
    for q in range(Q):
        got = await query(regs, 0, queue=q)
        assert got == {"pkts": 0, "bytes": 0, "cells": 0, "drops": 0}, f"queue {q} before traffic: {got}"

    sizes = [60, 61, 200, 777, 1514]
    frames = [frame(n, rng) for n in sizes]
    for data in frames:
        await src.send(AxiStreamFrame(data))
    enq = 0
    for _ in range(200):  # bounded: 200 polls (each an AXI4-Lite read)
        enq = await regs.read("h0_in.voq_enq_pkts")
        if enq >= len(frames):
            break
        await ClockCycles(dut.clk, 50)
    assert enq == len(frames), f"host 0's VOQ took {enq} of {len(frames)} frames"
    await ClockCycles(dut.clk, 2000)  # no GRANT comes back: nothing may leave the VOQ
    deq = await regs.read("h0_in.voq_deq_pkts")
    assert deq == 0, f"{deq} packets left host 0's VOQ with no GRANT"
    queued = await regs.read("h0_in.voq_queued_cells")
    assert queued > 0, "host 0's VOQ reports no queued cells"

    per_queue = {q: await query(regs, 0, queue=q) for q in range(Q)}
    busy = {q: v for q, v in per_queue.items() if v["pkts"] or v["bytes"] or v["cells"]}
    assert len(busy) == 1, f"one queue should hold the frames (one destination, one class): {busy}"
    ((q0, got),) = busy.items()
    want_bytes = sum(len(f) + TAG_BYTES for f in frames)
    assert got["pkts"] == len(frames), f"queue {q0}: {got['pkts']} packets, {len(frames)} sent"
    assert got["bytes"] == want_bytes, f"queue {q0}: {got['bytes']} bytes, {want_bytes} tagged bytes sent"
    assert got["cells"] == queued, f"queue {q0}: {got['cells']} cells, voq_queued_cells {queued}"
    drops = {q: v["drops"] for q, v in per_queue.items() if v["drops"]}
    assert not drops, f"VOQ drops counted with none possible: {drops}"
    # reading the same queue again after another index: the index is what selects
    again = await query(regs, 0, queue=q0)
    assert again == got, f"queue {q0} read again: {again}, first {got}"

    for t in range(T):
        got_t = await query(regs, 0, tenant=t)
        want = {"tenant_cells": queued if t == TENANT else 0, "tenant_drops": 0}
        assert got_t == want, f"host 0 tenant {t}: {got_t}, expected {want}"
    for q in range(Q):  # host 1 sent nothing: its own VOQ is empty
        got = await query(regs, 1, queue=q)
        assert got == {"pkts": 0, "bytes": 0, "cells": 0, "drops": 0}, f"host 1 queue {q}: {got}"
    try:
        await regs.write("h0_in.voq_query_pkts", 1)
    except RegisterError:
        pass
    else:
        raise AssertionError("a write to the RO h0_in.voq_query_pkts was accepted")
    delivered = [n for n in outs if n.startswith("m_axis_host") and not sinks[n].empty()]
    assert not delivered, f"frames delivered to a host with no GRANT: {delivered}"
    dut._log.info("queue %d of host 0: %s; %d cells queued for tenant %d", q0, busy[q0], queued, TENANT)
