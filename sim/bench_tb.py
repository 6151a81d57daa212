"""``gse bench traffic_gen|traffic_check|fabric_link``: the test gear's line rate and its
ECP5 implementation.

Line rate is measured with Amaranth's simulator on the generator (the one of the three
that could fall short of it): enabled at full rate with ``m_axis_tready`` always high,
after its table sweep and first frame, it counts beats over the window, for the
shortest frames (60 B, where the 5-clock preparation of the next frame must hide
behind 8 beats) and for 1500 B frames. The checker and the link take a beat every clock
by construction (``s_axis_tready`` is the constant 1), so their line rate is 1.0; the
figure reported for them is that constant, not a measurement.
"""

from amaranth.sim import Simulator

from opengse.rtl.tb.traffic_gen import TrafficGenerator

from .benchmark import (
    FMAX_TARGET_MHZ,
    LINE_RATE,
    Target,
    fmax_target,
    implement_block,
    no_pnr_figures,
    verdict,
)

__all__ = ["bench", "generator_beats_per_clock"]


def generator_beats_per_clock(frame_bytes, warmup=200, window=2000, data_width=64):
    """Beats per clock of a full-rate generator with ``m_axis_tready`` always high."""
    dut = TrafficGenerator(data_width)
    counts = {"beats": 0}
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.m_axis.ready, 1)
        for name, value in [
            ("host", 1),
            ("frame_min", frame_bytes),
            ("frame_max", frame_bytes),
            ("rate", 1 << 16),
            ("flows", 2),
            ("seed", 5),
        ]:
            ctx.set(getattr(dut, name), value)
        for _ in range(80):  # the table sweep (max_flows = 64 clocks)
            await ctx.tick()
        ctx.set(dut.enable, 1)
        for cycle in range(warmup + window):
            await ctx.tick()
            if cycle >= warmup and ctx.get(dut.m_axis.valid):
                counts["beats"] += 1

    sim.add_testbench(testbench)
    sim.run()
    return counts["beats"] / window


def bench(block, seeds=(1, 2, 3), pnr=True):
    fig = {}
    targets = []
    if block == "traffic_gen":
        fig["beats_per_clock_60B"] = round(generator_beats_per_clock(60), 4)
        fig["beats_per_clock_1500B"] = round(generator_beats_per_clock(1500), 4)
        targets += [
            Target("beats/clock (60 B)", fig["beats_per_clock_60B"], LINE_RATE),
            Target("beats/clock (1500 B)", fig["beats_per_clock_1500B"], LINE_RATE),
        ]
    else:
        fig["beats_per_clock"] = LINE_RATE  # s_axis_tready is the constant 1
    fig["target_beats_per_clock"] = LINE_RATE
    fig["target_fmax_mhz"] = FMAX_TARGET_MHZ
    fig.update(implement_block(block, {}, seeds=seeds) if pnr else no_pnr_figures())
    fig["note"], fig["meets_targets"] = verdict(targets + [fmax_target("Fmax (MHz)", fig)])
    return fig
