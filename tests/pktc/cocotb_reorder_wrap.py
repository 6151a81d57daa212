"""The reorder buffer's per-source ``seq`` across 65535 -> 0.

The bench cannot set a source's next ``seq`` due, but the documented window jump
(docs/pktc.md, "Timeout, skip and window jump") moves it: a source whose frames are
all out of window, with nothing stored, is resynchronised to their ``seq`` after
``timeout`` clocks, every skipped seq counted in ``lost``. Four jumps (0 -> 20000 ->
40000 -> 60000 -> 65530) bring source 2 to the wrap; then containers 65530..65535,
0..40 arrive shuffled in blocks of W/2 (frames of two containers interleaved), with
a duplicate of 65535 sent after the wrap and one container lost. Every container
must come out whole, in seq order across the wrap (ReorderChecker compares mod 2^16),
with ``lost`` = the seqs the jumps skipped (65527) + 1 and every counter exact."""

import cocotb

from cocotb_reorder import ReorderTB

SRC = 2


@cocotb.test()
async def test_reorder_seq_wrap(dut):
    tb = ReorderTB(dut, 1805)
    await tb.reset()
    tb.set_pauses(0.1, 0.2)
    W, timeout = tb.p["window"], tb.p["timeout"]
    lost = 0
    nxt = 0
    for target in (20000, 40000, 60000, 65530):
        frames = tb.container(SRC, target, nframes=1)
        tb.send(frames[0])
        tb.expect_stats["drop_window"] += 1
        await tb.wait_idle(timeout + 100)  # the jump
        lost += target - nxt
        # The jump target itself, now due: delivered.
        frames = tb.container(SRC, target)
        tb.checker.expect(SRC, target, frames)
        for fr in frames:
            tb.send(fr)
        nxt = target + 1
        await tb.wait_delivered(SRC, len(tb.checker.expected[SRC]))
    assert nxt == 65531
    seqs = [(65531 + k) & 0xFFFF for k in range(46)]  # 65531..65535, 0..40
    lost_seq = seqs[20]
    conts = {q: tb.container(SRC, q, nframes=tb.rng.randint(1, 3)) for q in seqs}
    for q in seqs:
        if q != lost_seq:
            tb.checker.expect(SRC, q, conts[q])
    lost += 1  # skipped after its timeout (later containers stored)
    # Send in blocks of W/2, each block shuffled, two containers' frames interleaved;
    # each block delivered before the next (the lost one skipped after its timeout).
    dup_sent = False
    for b in range(0, len(seqs), W // 2):
        span = seqs[b : b + W // 2]
        block = [q for q in span if q != lost_seq]
        tb.rng.shuffle(block)
        while block:
            pair, block = block[:2], block[2:]
            queues = [list(conts[q]) for q in pair]
            while any(queues):
                qq = tb.rng.choice([x for x in queues if x])
                tb.send(qq.pop(0))
        done = sum(1 for q in seqs[: b + W // 2] if q != lost_seq)
        await tb.wait_delivered(SRC, 4 + done)
        if 5 in span:
            for fr in conts[65535]:  # a copy of 65535 after the wrap: late, dropped
                tb.send(fr)
            tb.expect_stats["drop_dup"] += len(conts[65535])
            dup_sent = True
        await tb.wait_idle(0)
    assert dup_sent
    tb.expect_stats["lost"] = lost
    # ReorderTB.finish would check with ReorderChecker.check, which sorts the expected
    # seqs as plain numbers (not across a wrap): compare in delivery order here.
    await tb.wait_idle(3 * timeout)
    assert not tb.checker.errors, "\n".join(tb.checker.errors[:20])
    assert tb.checker._cur is None and tb.sink.empty(), "a container incomplete or frames left over"
    want, got_c = tb.checker.expected[SRC], tb.checker.got[SRC]
    assert [q for q, _ in got_c] == [q for q, _ in want], f"delivered {[q for q, _ in got_c]}"
    bad = [q for (q, ef), (_, gf) in zip(want, got_c) if ef != gf]
    assert not bad, f"containers {bad} differ"
    stats = await tb.stats()
    exp = dict(tb.expect_stats, containers_out=len(want))
    assert stats == exp, f"counters: got {stats}, expected {exp}"
    got = [q for q, _ in tb.checker.got[SRC]]
    assert 65535 in got and 0 in got and got.index(0) == got.index(65535) + 1, "no delivery across the wrap"
    dut._log.info("reorder seq wrap: delivered %d containers up to seq %d, lost %d", len(got), got[-1], lost)
