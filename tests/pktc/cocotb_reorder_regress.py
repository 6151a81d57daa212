"""cocotb regression tests of ReorderBuffer for issue 15, and its output rate.

* A copy of a container's LAST frame arriving with no idle clock after it is a
  duplicate (``drop_dup``), in the three egress situations the issue names: quiet
  egress; busy egress (another source's container stored first, ``m_axis`` held);
  and a container that fills its slot exactly.
* A frame with a valid-looking v1 DATA header behind a foreign EtherType (0x0800,
  0x8100, 0x88B6) is dropped and counted in ``drop_other``; the real container with
  that ``seq`` is delivered afterwards.
* Back-to-back in-order containers leave at 1 beat per clock: a monitor counts the
  output beats and the clocks from the first to the last beat (clocks, not wall time).

Every wait is bounded (``ReorderTB.wait_delivered`` / cycle limits)."""

import cocotb
from cocotb.triggers import RisingEdge

from cocotb_reorder import ReorderTB
from opengse.sim.pktc_model import FIRST, LAST, tagged_frame


def frames_of(tb, src, seq, sizes):
    """A container of tagged frames of exactly ``sizes`` bytes each."""
    n = len(sizes)
    return [
        tagged_frame(
            size - 18,
            tb.rng,
            src_node=src,
            dst_node=7,
            seq=seq,
            flags=(FIRST if k == 0 else 0) | (LAST if k == n - 1 else 0),
        )
        for k, size in enumerate(sizes)
    ]


def exact_fill_sizes(tb):
    """Three frame sizes (multiples of the beat) that fill one slot exactly."""
    bpb = tb.p["data_width"] // 8
    slot = tb.p["slot_bytes"]
    a = max(64, (slot // 3) // bpb * bpb)
    return [a, a, slot - 2 * a]


async def dup_last(dut, situation, seed):
    tb = ReorderTB(dut, seed)
    await tb.reset()
    if situation == "busy":
        # another source's container stored first, the output held
        tb.sink.pause = True
        tb.send_container(1, 0, frames_of(tb, 1, 0, [300, 200]))
    sizes = exact_fill_sizes(tb) if situation == "exact" else [300, 200, 100]
    cont = frames_of(tb, 0, 0, sizes)
    tb.send_container(0, 0, cont)
    tb.send(cont[-1])  # the copy of LAST, no idle clock before it
    tb.expect_stats["drop_dup"] += 1
    if situation == "busy":
        await tb.wait_idle(200)
        tb.sink.pause = False
    await tb.finish()
    out = sum(len(fr) for _, c in tb.checker.got.items() for _q, fr in c)
    exp = sum(len(fr) for _, c in tb.checker.expected.items() for _q, fr in c)
    assert out == exp, f"{out} frames out, {exp} expected"


@cocotb.test()
async def test_dup_last_quiet(dut):
    """Copy of LAST right after it, egress idle: dropped and counted as a duplicate."""
    await dup_last(dut, "quiet", 11)


@cocotb.test()
async def test_dup_last_busy(dut):
    """Copy of LAST right after it while the egress holds another source's container."""
    await dup_last(dut, "busy", 12)


@cocotb.test()
async def test_dup_last_exact_fill(dut):
    """Copy of LAST right after a container that fills its slot exactly: the container
    is delivered (not discarded as bad), the copy counted as a duplicate."""
    await dup_last(dut, "exact", 13)


@cocotb.test()
async def test_dup_last_in_traffic(dut):
    """Every container of four sources followed at once by a copy of its LAST: all
    delivered in order, every copy a duplicate, no container lost."""
    tb = ReorderTB(dut, 14)
    await tb.reset()
    W = tb.p["window"]
    for seq in range(2 * W):
        if seq >= W // 2:
            for src in range(tb.p["sources"]):
                await tb.wait_delivered(src, seq - W // 2 + 1)
        for src in range(tb.p["sources"]):
            cont = frames_of(tb, src, seq, [tb.rng.choice([64, 100, 300]) for _ in range(2)])
            tb.send_container(src, seq, cont)
            tb.send(cont[-1])
            tb.expect_stats["drop_dup"] += 1
    await tb.finish()


@cocotb.test()
async def test_foreign_ethertype(dut):
    """A v1 DATA header (src 0, seq 0, FIRST|LAST) behind EtherType 0x0800, 0x8100 or
    0x88B6 is dropped and counted in drop_other; the real container 0 is delivered."""
    tb = ReorderTB(dut, 15)
    await tb.reset()
    for et in (0x0800, 0x8100, 0x88B6):
        tb.send(
            tagged_frame(200 - 18, tb.rng, ethertype=et, src_node=0, dst_node=7, seq=0, flags=FIRST | LAST)
        )
        tb.expect_stats["drop_other"] += 1
    await tb.wait_idle(50)
    assert tb.checker.delivered(0) == 0, "a frame behind a foreign EtherType was delivered"
    tb.send_container(0, 0, frames_of(tb, 0, 0, [300, 200]))
    tb.send_container(0, 1, frames_of(tb, 0, 1, [100]))
    await tb.finish()


async def output_rate(tb, containers):
    """Store ``containers`` ((src, seq, sizes) in send order) with the output held,
    then release it: returns (beats, clocks from the first to the last output beat)."""
    tb.sink.pause = True
    bpb = tb.p["data_width"] // 8
    beats = 0
    for src, seq, sizes in containers:
        tb.send_container(src, seq, frames_of(tb, src, seq, sizes))
        beats += sum((s + bpb - 1) // bpb for s in sizes)
    await tb.wait_idle(100)
    assert all(tb.checker.delivered(s) == 0 for s in range(tb.p["sources"])), (
        "frames came out while the output was held"
    )
    seen, first, last, clk = 0, None, None, 0
    dut = tb.dut
    tb.sink.pause = False
    limit = 20 * beats + 1000
    while seen < beats:
        await RisingEdge(dut.clk)
        clk += 1
        if int(dut.m_axis_tvalid.value) and int(dut.m_axis_tready.value):
            seen += 1
            first = clk if first is None else first
            last = clk
        assert clk < limit, f"output rate: {seen} of {beats} beats after {clk} clocks"
    await tb.finish()
    return beats, last - first + 1


@cocotb.test()
async def test_rate_back_to_back_sources(dut):
    """Containers of four sources, stored, then released: 1 beat per clock, no idle
    clock between containers."""
    tb = ReorderTB(dut, 16)
    await tb.reset()
    slot = tb.p["slot_bytes"]
    conts = [
        (src, seq, [slot // 4, slot // 4 - 40])
        for seq in range(tb.p["window"] // 2)
        for src in range(tb.p["sources"])
    ]
    beats, clocks = await output_rate(tb, conts)
    assert beats == clocks, f"{beats} beats in {clocks} clocks ({beats / clocks:.4f} beats/clock)"


@cocotb.test()
async def test_rate_back_to_back_one_source(dut):
    """In-order containers of one source, stored, then released: 1 beat per clock."""
    tb = ReorderTB(dut, 17)
    await tb.reset()
    conts = [(2, seq, [tb.rng.randint(64, 400), 96]) for seq in range(tb.p["window"])]
    beats, clocks = await output_rate(tb, conts)
    assert beats == clocks, f"{beats} beats in {clocks} clocks ({beats / clocks:.4f} beats/clock)"
