"""cocotb bench for the PKTC path across an emulated fabric (gse_pktc_fabric_tb):
the sprayer of source 0 (with its link monitor) sends containers over U uplinks;
the emulated links (sim/pktc_model.py FabricModel: per-link delay, per-container
jitter, random loss of whole containers, one link failing mid-stream and later
coming back) deliver them, merged, to the reorder buffer, together with the
containers of sources 1..N-1 (stamped by the plain-Python SprayerModel).

Checked: per source, containers come out whole, in seq order, without duplicates,
byte-exact; exactly the containers the fabric lost are missing and the reorder
buffer counted each of them once; the failed link leaves the healthy set within
the link monitor's bound and rejoins; the sprayer's byte balance."""

import cocotb
from cocotb.triggers import RisingEdge

from opengse.sim.pktc_fabric_bench import FabricTB, now
from opengse.sim.pktc_model import FIRST, frame_fields, spray_balance
from opengse.sim.runner import test_params


@cocotb.test()
async def test_fabric_jitter_loss_link_failure(dut):
    p = test_params()
    fail_time, heal_time = 9000, 18000
    tb = FabricTB(dut, seed=11, loss=0.03, fail_link=1, fail_time=fail_time, heal_time=heal_time)
    await tb.reset()
    # the link monitor brings the links up after `rejoin` good intervals
    while int(dut.healthy.value) != (1 << tb.U) - 1:
        await RisingEdge(dut.clk)
    t_up = now()
    assert t_up <= (p["rejoin"] + 2) * p["interval"], f"links came up only at {t_up}"
    tasks = [cocotb.start_soon(tb.source0(70, 400)), cocotb.start_soon(tb.link_events())]
    tasks += [cocotb.start_soon(tb.other_source(s, 6, 5000)) for s in range(1, tb.N)]
    for t in tasks:
        await t
    # trailing containers, never lost, so that every loss is followed by a later container
    tb.fabric.loss = 0.0
    await tb.source0(6, 60)
    await tb.wait_settled(200000)

    # -- the properties -----------------------------------------------------------------
    lost = tb.fabric.lost_containers
    for src, conts in tb.sent.items():
        for seq, frames in conts:
            if (src, seq) not in lost:
                tb.checker.expect(src, seq, frames)
    errs = tb.checker.check()
    st = await tb.stats()
    where = {}
    for i in range(tb.U):
        for fr, t in tb.up_frames[i]:
            f = frame_fields(fr)
            if f["flags"] & FIRST:
                where[f["seq"]] = (i, t)
    diag = (
        f"\nreorder counters {st}, lost {sorted(lost)}; source 0 lost at "
        + str({q: where.get(q) for s, q in sorted(lost) if s == 0})
        + f"; healthy {tb.healthy_log}"
    )
    assert not errs, "\n".join(errs[:20]) + diag
    assert tb.out.empty()
    n_deliv = sum(len(v) for v in tb.checker.expected.values())
    exp = {"containers_out": n_deliv, "lost": len(lost)}
    got = {k: st[k] for k in exp}
    assert got == exp, f"reorder counters {st}, expected {exp} (lost {sorted(lost)})"
    for k in ("drop_dup", "drop_window", "drop_orphan", "drop_bad", "drop_runt", "drop_other"):
        assert st[k] == 0, f"unexpected {k}: {st}"
    on_failed = [
        k
        for k in lost
        if k[0] == 0 and any(frame_fields(fr)["seq"] == k[1] for fr, _t in tb.up_frames[tb.fail_link])
    ]
    assert on_failed, "the failing link lost nothing: the test did not exercise it"
    # the sprayer's own stamps: source 0's seqs are 0..n-1 with no gap at the sprayer
    seqs0 = [q for q, _f in tb.sent[0]]
    assert seqs0 == list(range(len(seqs0))), "sprayer seq not consecutive"

    # -- link monitor: the failed link left the healthy set within the bound, rejoined
    bound = (p["miss_limit"] + 1) * p["interval"] + 2 + p["probe_delay"]
    down = [(t, m) for t, m in tb.healthy_log if t >= fail_time and not m >> tb.fail_link & 1]
    assert down, "failed link never left the healthy set"
    assert down[0][0] - fail_time <= bound, f"left after {down[0][0] - fail_time} clocks > {bound}"
    up_again = [(t, m) for t, m in tb.healthy_log if t >= heal_time and m >> tb.fail_link & 1]
    assert up_again, "link never rejoined"
    # nothing was sprayed on it while it was out (3 clocks of decision latency allowed)
    for fr, t in tb.up_frames[tb.fail_link]:
        f = frame_fields(fr)
        if f["flags"] & FIRST:
            assert not (down[0][0] + 3 + 200 <= t < up_again[0][0]), (
                f"container {f['seq']} sent on the failed link at {t}"
            )
    used_after = any(t > up_again[0][0] + 3 for fr, t in tb.up_frames[tb.fail_link])
    assert used_after, "rejoined link not used again"
    # link_up falling: out of the healthy set 2 clocks after the pin, not used meanwhile
    dl = tb.down_link
    down2 = [t for t, m in tb.healthy_log if t >= tb.down_time and not m >> dl & 1]
    up2 = [t for t, m in tb.healthy_log if t >= tb.down_time + 2000 and m >> dl & 1]
    assert down2 and down2[0] - tb.down_time <= 2, f"link_up: healthy fell at {down2[:1]}"
    assert up2, "link never rejoined after link_up"
    for fr, t in tb.up_frames[dl]:
        if frame_fields(fr)["flags"] & FIRST:
            assert not (down2[0] + 5 <= t < up2[0]), f"container sent on a down link at {t}"
    assert int(getattr(dut, f"lm_stat_down_events_{dl}").value) == 1
    lm = {
        n: int(getattr(dut, f"lm_stat_{n}_{tb.fail_link}").value)
        for n in ("probes_sent", "probes_rcvd", "probes_missed", "down_events")
    }
    assert lm["down_events"] == 1 and lm["probes_missed"] >= p["miss_limit"], lm

    # -- balance of the sprayer over the links that never failed
    ok_mask = ((1 << tb.U) - 1) & ~(1 << tb.fail_link) & ~(1 << tb.down_link)
    up_only = [[fr for fr, _t in tb.up_frames[i]] for i in range(tb.U)]
    bal, totals = spray_balance(up_only, ok_mask)
    biggest = 4 * (500 + 18)
    tb.dut._log.info(
        f"spray balance {bal} bytes over links {ok_mask:b}: {totals}; lost {len(lost)}, "
        f"on the failed link {len(on_failed)}; reorder {st}"
    )
    if p["policy"] == 1:
        assert bal <= biggest, f"least-loaded balance {bal} > one container ({biggest})"
