"""Reorder buffer hostile-input soak (issue 18): ``OPENGSE_SOAK_N`` frames (1e4 by
default) from every source, containers shuffled within the window, with every kind
of input the block must drop or survive mixed in:

- lost containers (skipped at the timeout, ``stat_lost``), bad containers (``tuser``
  on a frame's last beat) and oversize ones (``drop_bad``, one per container);
- duplicated containers and stale seqs far behind the window (``drop_dup``), seqs
  ahead of the window without FIRST (``drop_window``), middle/last frames ahead of
  their FIRST (``drop_orphan``);
- containers of unknown sources, malformed DATA frames (``ver`` not 1, ``type`` not
  DATA), foreign EtherTypes (``drop_other``); runts of 1-31 bytes, some with ``tuser``
  or a ``tkeep == 0`` last beat (``drop_runt``);
- frames the block must deliver unchanged: ``tuser`` on an earlier beat only,
  ``ttl`` 0 and a wrong ``len`` (the reorder buffer reads neither).

Random idle cycles on the input and back-pressure on the output. Checked: every
frame against ReorderChecker (order per source, whole containers), every counter
exact, frames conserved (delivered + in discarded containers + drop counters ==
sent), and full return: a whole window per source accepted at once and delivered
after the run (no slot held), no output once drained."""

import cocotb
from cocotb.triggers import ClockCycles, Event, First, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamFrame

from cocotb_reorder import ReorderTB
from opengse.sim.pktc_model import FIRST, LAST, PROBE, REQUEST, tagged_frame
from opengse.sim.soak import check_conservation, soak_inputs

DROPS = ("drop_dup", "drop_window", "drop_orphan", "drop_runt", "drop_other")


class SoakTB(ReorderTB):
    def __init__(self, dut, seed):
        self.progress = Event()  # set by each delivered frame (before _collect starts)
        super().__init__(dut, seed)
        self.B = self.p["data_width"] // 8
        self.bad_frames = 0  # frames of containers discarded whole (drop_bad)
        self.delivered_frames = 0
        self.kinds = {}

    def tally(self, kind, k=1):
        self.kinds[kind] = self.kinds.get(kind, 0) + k

    async def _collect(self):
        while True:
            fr = await self.sink.recv()
            self.delivered_frames += 1
            self.checker.frame(fr.tdata)
            self.progress.set()

    async def wait_delivered(self, src, count, limit=200000):
        """As ReorderTB's, woken by each delivered frame instead of polling every clock."""
        t0 = int(get_sim_time("ns")) // 10
        while self.checker.delivered(src) < count:
            left = limit - (int(get_sim_time("ns")) // 10 - t0)
            if left <= 0:
                raise AssertionError(
                    f"source {src}: {self.checker.delivered(src)} of {count} containers "
                    f"delivered in {limit} clocks; stats {await self.stats()}"
                )
            self.progress.clear()
            await First(self.progress.wait(), ClockCycles(self.dut.clk, left))

    def send_raw(self, data, tkeep=None, tuser=0):
        self.source.send_nowait(AxiStreamFrame(data, tkeep=tkeep, tuser=tuser))
        self.expect_stats["frames_in"] += 1

    def runt(self):
        n = self.rng.randint(1, 31)
        data = self.rng.randbytes(n)
        r = self.rng.random()
        if r < 0.3:  # tuser on its last beat: still a runt
            self.send_raw(data, tuser=[0] * (n - 1) + [1])
            self.tally("runt+tuser")
        elif r < 0.6:  # an extra last beat with tkeep == 0
            pad = (-n) % self.B + self.B
            self.send_raw(data + bytes(pad), tkeep=[1] * n + [0] * pad)
            self.tally("runt+tkeep0")
        else:
            self.send_raw(data)
            self.tally("runt")
        self.expect_stats["drop_runt"] += 1

    def dropped_other(self, src):
        r = self.rng.random()
        seq = self.rng.randrange(65536)
        if r < 0.25:
            fr = tagged_frame(
                self.rng.randint(60, 120), self.rng, src_node=src, seq=seq, ver=2, flags=FIRST | LAST
            )
            self.tally("ver")
        elif r < 0.5:
            typ = self.rng.choice((REQUEST, PROBE, 7))
            fr = tagged_frame(
                self.rng.randint(60, 120), self.rng, src_node=src, seq=seq, type=typ, flags=FIRST
            )
            self.tally("type")
        elif r < 0.75:
            fr = tagged_frame(
                self.rng.randint(60, 120),
                self.rng,
                src_node=self.p["sources"] + self.rng.randrange(60000),
                seq=seq,
                flags=FIRST | LAST,
            )
            self.tally("unknown source")
        else:
            fr = tagged_frame(self.rng.randint(60, 120), self.rng, ethertype=0x0800, src_node=src, seq=seq)
            self.tally("ethertype")
        self.send(fr)
        self.expect_stats["drop_other"] += 1


async def soak_source(tb, src, budget, p):
    """Send containers of ``src`` until ``budget`` frames are in; return its next seq."""
    W = tb.p["window"]
    blk = W // 2
    start = 0
    per_src = {"frames": 0}

    def count():
        return per_src["frames"]

    while count() < budget:
        need = sum(1 for (s, q) in tb.sent_containers if s == src and q < start - blk)
        await tb.wait_delivered(src, need)
        before = tb.expect_stats["frames_in"]
        seqs = list(range(start, start + blk))
        plan = {}
        for q in seqs:
            r = tb.rng.random()
            if q == seqs[-1] or r >= p["lost"] + p["bad"] + p["oversize"]:
                plan[q] = "good"
            elif r < p["lost"]:
                plan[q] = "lost"
            elif r < p["lost"] + p["bad"]:
                plan[q] = "bad"
            else:
                plan[q] = "oversize"
        order = list(seqs)
        tb.rng.shuffle(order)
        for q in order:
            if plan[q] == "oversize":
                slot = tb.p["slot_bytes"]
                frames = tb.container(src, q, nframes=slot // 200 + 2, max_len=200)
                while sum(len(f) for f in frames) <= slot:
                    frames = tb.container(src, q, nframes=slot // 200 + 2, max_len=200)
                for fr in frames:
                    tb.send(fr)
                tb.expect_stats["drop_bad"] += 1
                tb.bad_frames += len(frames)
                tb.tally("oversize")
                continue
            frames = tb.container(src, q, max_len=140)
            if plan[q] == "good" and tb.rng.random() < p["odd"]:
                # fields the reorder buffer does not read: ttl 0, a wrong len
                k = tb.rng.randrange(len(frames))
                flags = frames[k][15]
                frames[k] = tagged_frame(
                    tb.rng.randint(60, 140),
                    tb.rng,
                    src_node=src,
                    dst_node=7,
                    seq=q,
                    flags=flags,
                    ttl=tb.rng.choice((0, 1)),
                    len=tb.rng.randrange(65536),
                )
                tb.tally("ttl/len")
            if plan[q] != "lost" and len(frames) > 1 and tb.rng.random() < p["orphan"]:
                tb.send(frames[-1])
                tb.expect_stats["drop_orphan"] += 1
                tb.tally("orphan")
            if plan[q] == "good" and tb.rng.random() < p["tuser_early"]:
                # tuser on an earlier beat only: not bad, delivered
                fr = frames[0]
                tb.send_raw(fr, tuser=[1] + [0] * (len(fr) - 1))
                for f in frames[1:]:
                    tb.send(f)
                tb.checker.expect(src, q, frames)
                tb.sent_containers[(src, q)] = frames
                tb.tally("tuser early")
            else:
                if plan[q] == "bad":
                    tb.bad_frames += len(frames)
                    tb.tally("bad")
                elif plan[q] == "lost":
                    tb.tally("lost")
                tb.send_container(src, q, frames, plan[q])
        olds = [k for k in tb.sent_containers if k[0] == src]
        if olds and tb.rng.random() < p["dup"]:
            key = tb.rng.choice(olds)
            tb.send_container(src, key[1], tb.sent_containers[key], "dup")
            tb.tally("dup")
        if tb.rng.random() < p["stale"]:
            k = tb.rng.randint(blk + W + 1, 30000)
            fr = tagged_frame(
                80, tb.rng, src_node=src, seq=(start - k) % 65536, flags=tb.rng.choice((0, 1, 2, 3))
            )
            tb.send(fr)
            tb.expect_stats["drop_dup"] += 1
            tb.tally("stale")
        if tb.rng.random() < p["ahead"]:
            q = start + blk + W + tb.rng.randrange(1000)
            tb.send(tagged_frame(80, tb.rng, src_node=src, seq=q % 65536, flags=tb.rng.choice((0, LAST))))
            tb.expect_stats["drop_window"] += 1
            tb.tally("ahead")
        if tb.rng.random() < p["other"]:
            tb.dropped_other(src)
        if tb.rng.random() < p["runt"]:
            tb.runt()
        per_src["frames"] += tb.expect_stats["frames_in"] - before
        start += blk
        await RisingEdge(tb.dut.clk)
    return start


async def full_window(tb, nxt):
    """Every source's whole window at once: all W slots must be free."""
    W = tb.p["window"]
    for s in nxt:  # everything before it out first: the window starts at nxt[s]
        await tb.wait_delivered(s, len(tb.checker.expected[s]))
    tb.set_pauses(0.01, 0.01)
    for s, start in nxt.items():
        for q in range(start, start + W):
            tb.send_container(s, q, tb.container(s, q, nframes=1))
    for s in nxt:
        await tb.wait_delivered(s, len(tb.checker.expected[s]), limit=20_000)


@cocotb.test()
async def test_runt_empty_last_beat(dut):
    """Each frame of 1-31 bytes followed by a last beat with tkeep == 0 (sent alone,
    after idle clocks) is a runt: ``drop_runt`` and nothing else; a GSE DATA frame cut
    at byte 31 so is not stored or delivered."""
    tb = SoakTB(dut, 7)
    await tb.reset()
    wrong = []
    prev = await tb.stats()
    frames = [(n, tb.rng.randbytes(n)) for n in range(1, 32)]
    frames.append((31, tagged_frame(60, tb.rng, src_node=1, seq=0, flags=FIRST | LAST)[:31]))
    for n, data in frames:
        pad = (-n) % tb.B + tb.B
        tb.send_raw(data + bytes(pad), tkeep=[1] * n + [0] * pad)
        await tb.wait_idle(3 * tb.p["timeout"] if n == 31 else 20)
        got = await tb.stats()
        diff = {k: got[k] - prev[k] for k in got if got[k] != prev[k] and k != "frames_in"}
        if diff != {"drop_runt": 1}:
            wrong.append(f"{n} B (EtherType {data[12:14].hex()}): {diff}")
        prev = got
    assert not wrong, "frames with an empty last beat not counted as runts: " + "; ".join(wrong)
    assert tb.sink.empty(), "a runt was delivered"


@cocotb.test()
async def test_reorder_soak(dut):
    tb = SoakTB(dut, 1818)
    n = soak_inputs()
    tb.set_pauses(0.1, 0.2)
    await tb.reset()
    N = tb.p["sources"]
    probs = dict(
        lost=0.01,
        bad=0.03,
        oversize=0.005,
        odd=0.03,
        orphan=0.05,
        tuser_early=0.05,
        dup=0.2,
        stale=0.2,
        ahead=0.2,
        other=0.3,
        runt=0.2,
    )
    tasks = [cocotb.start_soon(soak_source(tb, s, n // N, probs)) for s in range(N)]
    nxt = {}
    for s, t in enumerate(tasks):
        nxt[s] = await t
    await full_window(tb, nxt)
    await tb.finish()
    got = await tb.stats()
    expected = {**tb.expect_stats, "containers_out": sum(len(v) for v in tb.checker.expected.values())}
    check_conservation(got["frames_in"], tb.delivered_frames + tb.bad_frames, got, expected, DROPS)
    await ClockCycles(dut.clk, 200)
    assert int(dut.m_axis_tvalid.value) == 0 and tb.sink.empty(), "output after the drain"
    dut._log.info("reorder soak: %d frames in, counters %s, kinds %s", got["frames_in"], got, tb.kinds)
