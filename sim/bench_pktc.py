"""``gse bench pktc``: figures of the PKTC blocks (sprayer, reorder buffer).

:func:`bench` runs short Verilator simulations (the cocotb benches at the end of
this module) and, with ``pnr=True``, implements the sprayer and the reorder buffer
on ECP5 at 64 bits:

* ``spray_balance_bytes``: max - min data bytes per uplink after a run of mixed
  containers (whole packets of 64..1518 bytes up to a 4096-byte grant, the last
  one overrunning), per policy; target: at most one container
  (``spray_balance_target_bytes`` = the largest container of the run).
* ``sprayer_beats_per_clock``: output beats / clocks from the first to the last
  beat, inputs always valid, uplinks always ready (target 1.0).
* ``reorder_beats_per_clock_64`` / ``_256``: the same at the reorder buffer's output
  (``reorder_beats_clocks_<w>``: beats and clocks counted), 32 containers of 4 x 1036
  bytes from 4 sources stored whole, then released with the output always ready
  (target 1.0: no idle clock between containers); ``reorder_beats_per_clock`` is the
  lower of the two.
* ``reorder_occupancy``: peak bytes and containers held by the reorder buffer
  across the emulated fabric (4 uplinks with 30..120-clock delays and 0..80 clocks
  of per-container jitter), sprayer at about 35% load.
* ``sprayer`` / ``reorder``: :func:`~opengse.sim.benchmark.implement_block` figures.
"""

import json
import os
import random
import tempfile
from pathlib import Path

from .pktc_fabric_top import SPEC as PKTC_FABRIC

__all__ = ["bench", "SPRAYER_PARAMS", "REORDER_PARAMS"]

SPRAYER_PARAMS = {"data_width": 64, "uplinks": 4, "nodes": 16}
REORDER_PARAMS = {"data_width": 64, "sources": 4, "window": 8, "slot_bytes": 8192, "timeout": 4096}
REORDER_WIDTHS = (64, 256)  # reorder output rate measured at both
FABRIC_PARAMS = {
    "data_width": 64,
    "uplinks": 4,
    "policy": 1,
    "sources": 4,
    "window": 8,
    "slot_bytes": 4096,
    "timeout": 800,
    "interval": 256,
    "miss_limit": 2,
    "rejoin": 2,
    "probe_delay": 40,
}
_OUT_ENV = "OPENGSE_BENCH_OUT"


def _sim(block, params, testcase):
    from opengse.sim.runner import run_cocotb

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "figures.json"
        run_cocotb(
            block,
            params,
            "opengse.sim.bench_pktc",
            testcase=testcase,
            extra_env={_OUT_ENV: str(out)},
            build_args=("--output-split", "0"),
            cxx_opt="-O0",
        )
        return json.loads(out.read_text())


def bench(seeds=(1, 2, 3), pnr=True):
    figures = {"target_fmax_mhz": 156.25}
    for policy, name in ((0, "round_robin"), (1, "least_loaded")):
        r = _sim("sprayer", dict(SPRAYER_PARAMS, policy=policy), "bench_sprayer")
        figures[f"spray_balance_bytes_{name}"] = r["balance"]
        figures[f"spray_bytes_per_uplink_{name}"] = r["totals"]
        figures["spray_balance_target_bytes"] = r["largest_container"]
        figures[f"sprayer_beats_per_clock_{name}"] = r["beats_per_clock"]
    figures["spray_balance_bytes"] = figures["spray_balance_bytes_least_loaded"]
    figures["sprayer_beats_per_clock"] = min(
        figures["sprayer_beats_per_clock_round_robin"], figures["sprayer_beats_per_clock_least_loaded"]
    )
    for width in REORDER_WIDTHS:
        r = _sim("reorder", dict(REORDER_PARAMS, data_width=width), "bench_reorder")
        figures[f"reorder_beats_per_clock_{width}"] = r["beats_per_clock"]
        figures[f"reorder_beats_clocks_{width}"] = [r["beats"], r["clocks"]]
    figures["reorder_beats_per_clock"] = min(figures[f"reorder_beats_per_clock_{w}"] for w in REORDER_WIDTHS)
    r = _sim(PKTC_FABRIC, FABRIC_PARAMS, "bench_fabric")
    figures["reorder_occupancy"] = r
    figures["beats_per_clock"] = min(figures["sprayer_beats_per_clock"], figures["reorder_beats_per_clock"])
    if pnr:
        from opengse.sim.benchmark import implement_block

        figures["sprayer"] = implement_block("sprayer", dict(SPRAYER_PARAMS, policy=1), seeds=seeds)
        figures["reorder"] = implement_block("reorder", REORDER_PARAMS, seeds=seeds)
    else:
        from opengse.sim.benchmark import no_pnr_figures

        figures["sprayer"] = no_pnr_figures()
        figures["reorder"] = no_pnr_figures()
    fm = [figures[b]["fmax_mhz"] for b in ("sprayer", "reorder")]
    figures["fmax_mhz"] = min(fm) if all(f is not None for f in fm) else None
    from opengse.sim.benchmark import LINE_RATE, Target, fmax_target, verdict

    figures["note"], figures["meets_targets"] = verdict(
        [
            Target(
                "least-loaded spray balance (bytes)",
                figures["spray_balance_bytes"],
                figures["spray_balance_target_bytes"],
                least=False,
            ),
            Target("sprayer beats/clock", figures["sprayer_beats_per_clock"], LINE_RATE),
            *[
                Target(f"reorder beats/clock at {w} bits", figures[f"reorder_beats_per_clock_{w}"], LINE_RATE)
                for w in REORDER_WIDTHS
            ],
            fmax_target("sprayer Fmax (MHz)", figures["sprayer"]),
            fmax_target("reorder Fmax (MHz)", figures["reorder"]),
        ]
    )
    return figures


# ---- cocotb benches (run by bench() through sim.runner) -----------------------------------

try:
    import cocotb
except ImportError:  # bench() itself does not need cocotb
    cocotb = None


def _write(fig):
    Path(os.environ[_OUT_ENV]).write_text(json.dumps(fig))


def _container_lens(rng, grant=4096):
    lens, total = [], 0
    while total < grant:  # the last packet may overrun the grant
        ln = rng.choice([64, 128, 256, 512, 1024, 1500, 1518, rng.randint(64, 1518)])
        lens.append(ln)
        total += ln
    return lens


if cocotb is not None:
    import logging

    from cocotb.clock import Clock
    from cocotb.triggers import RisingEdge, with_timeout

    async def _reset(dut):
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        for _ in range(40):  # seq table clear
            await RisingEdge(dut.clk)

    @cocotb.test(skip=os.environ.get(_OUT_ENV) is None)
    async def bench_sprayer(dut):
        from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

        from opengse.sim.pktc_model import check_containers_whole, spray_balance, tagged_frame
        from opengse.sim.runner import test_params
        from opengse.sim.valid_ready import FieldStreamSource

        p = test_params()
        U = p["uplinks"]
        rng = random.Random(7)
        src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        meta = FieldStreamSource(dut, "s_meta", dut.clk, ("dst_node", "dgsq", "ttl", "len", "last"))
        sinks = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{i}"), dut.clk, dut.rst) for i in range(U)
        ]
        for x in [src] + sinks:
            x.log.setLevel(logging.WARNING)
        dut.healthy.value = (1 << U) - 1
        dut.s_ctrl_tvalid.value = 0
        await _reset(dut)
        largest, beats = 0, 0
        for n in range(48):
            lens = _container_lens(rng)
            largest = max(largest, sum(ln + 18 for ln in lens))
            dst = rng.randrange(p["nodes"])
            for k, ln in enumerate(lens):
                fr = tagged_frame(ln, rng, src_node=1, dst_node=dst)
                beats += (len(fr) + 7) // 8
                src.send_nowait(AxiStreamFrame(fr))
                meta.send({"dst_node": dst, "dgsq": 1, "ttl": 8, "len": ln, "last": int(k == len(lens) - 1)})
        nframes = src.queue_occupancy_frames if hasattr(src, "queue_occupancy_frames") else None
        while not src.empty() or src.active:
            await RisingEdge(dut.clk)
        for _ in range(50):
            await RisingEdge(dut.clk)
        frames, t0, t1 = [], None, 0
        for s in sinks:
            got = []
            while not s.empty():
                fr = s.recv_nowait()
                got.append(bytes(fr.tdata))
                t0 = fr.sim_time_start if t0 is None else min(t0, fr.sim_time_start)
                t1 = max(t1, fr.sim_time_end)
            frames.append(got)
        check_containers_whole(frames)
        bal, totals = spray_balance(frames)
        clocks = (t1 - t0) // 10000 + 1
        _write(
            {
                "balance": bal,
                "totals": totals,
                "largest_container": largest,
                "beats_per_clock": round(beats / clocks, 4),
                "beats": beats,
                "clocks": clocks,
                "frames": nframes,
            }
        )

    @cocotb.test(skip=os.environ.get(_OUT_ENV) is None)
    async def bench_reorder(dut):
        from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

        from opengse.sim.pktc_model import FIRST, LAST, tagged_frame
        from opengse.sim.runner import test_params

        bpb = test_params()["data_width"] // 8
        rng = random.Random(8)
        src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        for x in (src, sink):
            x.log.setLevel(logging.WARNING)
        await _reset(dut)
        # stored first (sink paused), then released at full speed
        sink.pause = True
        beats, n = 0, 0
        for seq in range(8):
            for s in range(4):
                lens = [1018] * 4  # 4 x 1036 tagged bytes: 4 KB containers
                for k, ln in enumerate(lens):
                    flags = (FIRST if k == 0 else 0) | (LAST if k == len(lens) - 1 else 0)
                    fr = tagged_frame(ln, rng, src_node=s, seq=seq, flags=flags)
                    beats += (len(fr) + bpb - 1) // bpb
                    src.send_nowait(AxiStreamFrame(fr))
                n += 1
        while not src.empty() or src.active:
            await RisingEdge(dut.clk)
        for _ in range(20):
            await RisingEdge(dut.clk)
        sink.pause = False
        t0, t1, got = None, 0, 0
        while got < n * 4:
            # bounded: a reorder buffer that stops delivering fails the bench, not hangs it
            fr = await with_timeout(sink.recv(), 2000, "us")
            got += 1
            t0 = fr.sim_time_start if t0 is None else min(t0, fr.sim_time_start)
            t1 = max(t1, fr.sim_time_end)
        clocks = (t1 - t0) // 10000 + 1
        _write({"beats_per_clock": round(beats / clocks, 4), "beats": beats, "clocks": clocks})

    @cocotb.test(skip=os.environ.get(_OUT_ENV) is None)
    async def bench_fabric(dut):
        from opengse.sim.pktc_fabric_bench import FabricTB
        from opengse.sim.pktc_model import FIRST, LAST, frame_fields

        tb = FabricTB(dut, seed=21, loss=0.0, fail_link=None, fail_time=None, heal_time=None)
        occ = {"bytes": 0, "containers": 0, "peak_bytes": 0, "peak_containers": 0}
        pending = set()

        orig_send = tb.fab.send_nowait

        def on_arrival(frame):
            fr = bytes(frame.tdata)
            f = frame_fields(fr)
            occ["bytes"] += len(fr)
            if f["flags"] & FIRST:
                pending.add((f["src_node"], f["seq"]))
            occ["peak_bytes"] = max(occ["peak_bytes"], occ["bytes"])
            occ["peak_containers"] = max(occ["peak_containers"], len(pending))
            orig_send(frame)

        tb.fab.send_nowait = on_arrival

        orig_frame = tb.checker.frame

        def on_out(fr):
            f = frame_fields(bytes(fr))
            occ["bytes"] -= len(fr)
            if f["flags"] & LAST:
                pending.discard((f["src_node"], f["seq"]))
            orig_frame(fr)

        tb.checker.frame = on_out
        await tb.reset()
        while int(dut.healthy.value) != (1 << tb.U) - 1:
            await RisingEdge(dut.clk)
        tasks = [cocotb.start_soon(tb.source0(60, 400))]
        tasks += [cocotb.start_soon(tb.other_source(s, 5, 5000)) for s in range(1, tb.N)]
        for t in tasks:
            await t
        await tb.wait_settled(200000)
        _write(
            {
                "peak_bytes": occ["peak_bytes"],
                "peak_containers": occ["peak_containers"],
                "capacity_containers": tb.N * tb.p["window"],
                "jitter_clocks": tb.fabric.jitter,
                "delays_clocks": tb.fabric.base,
            }
        )
