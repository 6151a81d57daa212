"""Soak of the VOQ buffer (opengse.sim.soak): N hostile packets in fill/release phases,
every drop predicted exactly by sim/voq_model.py.

Hostile inputs: ``tuser`` on the last beat (bad), ``tuser`` on an earlier beat only
(not bad), a last beat with ``tkeep == 0`` (bad, docs/voq.md), a last beat with
non-contiguous ``tkeep`` (its byte count is its highest set bit + 1), 1-3 byte bad
packets, packets longer than the buffer (1 in 500: 4 to 10 kB, dropped ``full`` or
``queue``), queue and tenant limits hit by bursts to one queue or one tenant. Checks:
every released packet byte for byte and in order, every done report and release rule,
the drop counters globally, per queue and per tenant exactly, delivered + drops == sent,
a progress watchdog on s_axis and m_axis, and at the end a full return (every cell
free, nothing queued or in flight, ``stat_invariant_err`` clear)."""

import os
import random

import cocotb
from cocotbext.axi import AxiStreamFrame

from cocotb_voq import CELLS, CREDIT_MAX_FIELD, P, VOQBench, model
from opengse.sim.soak import ProgressWatchdog, check_conservation, check_full_return, soak_inputs
from opengse.sim.voq_model import DROP_REASONS, Packet

W = P["data_width"] // 8
DEBUG = bool(os.environ.get("VOQ_SOAK_DEBUG"))


def hostile_packet(tb, rng, i, nq, nt):
    """``(Packet for the model, AxiStreamFrame, label)``; the model's data is the bytes
    the buffer counts and releases."""
    q, t = rng.randrange(nq), rng.randrange(nt)
    if rng.random() < 0.15:
        q, t = rng.randrange(2), 0  # bursts to two queues of one tenant: queue and tenant limits
    kind = rng.choice(("good", "good", "good", "bad", "early", "keep_zero", "keep_holes", "tiny"))
    if i % 500 == 499:
        kind = "huge"
    length = {"huge": rng.randint(4096, 10_000), "tiny": rng.randint(1, 3)}.get(kind, rng.randint(4, 200))
    seq = tb.seq.get(q, 0)
    tb.seq[q] = seq + 1
    tag = (q << 16) | (seq & 0xFFFF)
    data = (tag.to_bytes(4, "little") + rng.randbytes(max(0, length - 4)))[:length]
    n = len(data)
    keep, user = [1] * n, [0] * n
    bad = kind in ("bad", "tiny") or (kind == "huge" and rng.random() < 0.3)
    counted = data
    if kind == "keep_zero":  # one more beat with tkeep 0: a bad frame
        pad = (-n) % W
        data = data + rng.randbytes(pad + W)
        keep = keep + [1] * pad + [0] * W
        user = [0] * len(data)
        # docs/voq.md: the tkeep-0 beat counts 0 bytes (also when it begins a new cell,
        # which is then not one of the packet's cells); the frame is bad.
        counted, bad = data[: n + pad], True
    elif kind == "keep_holes" and n % W not in (0, 1):
        start = n - n % W
        pattern = [rng.randrange(2) for _ in range(n - start - 1)] + [1]
        if all(pattern):
            pattern[0] = 0
        keep[start:] = pattern
    last = (len(data) - 1) // W * W
    if bad:
        for k in range(last, len(data)):
            user[k] = 1
    if kind == "early" and last:
        user[rng.randrange(last)] = 1
    return Packet(q, t, bytes(counted), bad, tag), AxiStreamFrame(data, tkeep=keep, tuser=user), kind


async def send(tb, pkt, frame):
    tb.sent[pkt.tag] = pkt
    tb.sent_order.setdefault(pkt.queue, []).append(pkt.tag)
    tb.meta_q.append((pkt.queue, pkt.tenant, len(pkt.data)))
    await tb.src.send(frame)


@cocotb.test()
async def test_voq_soak(dut):
    n = soak_inputs()
    rng = random.Random(1801)
    tb = VOQBench(dut, seed=1801)
    await tb.reset()
    m = model()
    nq, nt = min(P["queues"], 8), min(P["tenants"], 4)
    released = [0]

    wd = ProgressWatchdog(dut.clk, limit=20_000)
    wd.watch(
        "s_axis", dut.s_axis_tvalid, dut.s_axis_tready, "accepted", lambda: tb.src.count() + tb.src.active
    )
    wd.watch(
        "m_axis",
        dut.m_axis_tvalid,
        dut.m_axis_tready,
        "produced",
        lambda: len(tb.deq_q) + (m.deq_pkts - released[0]),
    )
    wd.start()

    async def release(q, credit):
        exp = m.release(q, credit)
        tb.request(q, credit)
        ((rq, nb, npk, frames),) = await tb.collect(1, timeout=50_000)
        wd.check()
        assert rq == q, f"done report of queue {rq} for a release of queue {q}"
        tb.check_release(q, credit, nb, npk, frames, exp)
        released[0] += npk

    sent, made, phase = 0, {}, 0
    while sent < n:
        tb.set_backpressure(p_in_idle=0.2 * (phase % 2), p_out_pause=0.3 * (phase % 3 == 1))
        log = []
        for _ in range(min(n - sent, rng.randint(20, 60))):
            pkt, frame, kind = hostile_packet(tb, rng, sent, nq, nt)
            made[kind] = made.get(kind, 0) + 1
            log.append((sent, kind, len(pkt.data), len(frame.tdata), pkt.bad, m.enqueue(pkt)))
            await send(tb, pkt, frame)
            sent += 1
        await tb.idle(timeout=50_000)
        wd.check()
        if phase % 8 == 0 or DEBUG:
            try:
                await tb.check_counters(m, queues=range(nq), tenants=range(nt))
            except AssertionError:
                dut._log.error("phase %d packets: %s", phase, log)
                dut._log.error(
                    "rtl %s model %s",
                    {r: int(getattr(dut, f"stat_drop_{r}").value) for r in DROP_REASONS},
                    m.drops,
                )
                raise
        for _ in range(rng.randint(3, 10)):
            await release(rng.randrange(nq), rng.choice((0, 1, 64, 500, 1500, 4096, CREDIT_MAX_FIELD)))
        if phase % 4 == 3:
            for q in range(nq):
                while m.q[q]:
                    await release(q, CREDIT_MAX_FIELD)
        await tb.idle(timeout=50_000)
        phase += 1
    for q in range(nq):
        while m.q[q]:
            await release(q, CREDIT_MAX_FIELD)
    await tb.check_counters(m, queues=range(nq), tenants=range(nt))
    counters = {f"drop_{r}": int(getattr(dut, f"stat_drop_{r}").value) for r in DROP_REASONS}
    expected = {f"drop_{r}": m.drops[r] for r in DROP_REASONS}
    check_conservation(n, released[0], counters, expected, list(counters), "packets")
    assert int(dut.stat_enq_pkts.value) == int(dut.stat_deq_pkts.value) == released[0]
    await tb.final_checks()
    check_full_return(
        dut,
        {"stat_free_cells": CELLS, "stat_queued_cells": 0, "stat_deq_cells": 0, "stat_enq_cells": 0},
        ("stat_invariant_err", "m_axis_tvalid", "m_deq_done_valid"),
    )
    assert all(m.drops[r] for r in DROP_REASONS), f"a drop reason never happened: {m.drops}"
    dut._log.info("voq soak: %d packets, %d released, drops %s, made %s", n, released[0], m.drops, made)
