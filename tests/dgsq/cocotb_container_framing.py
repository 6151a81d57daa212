"""cocotb tests of gse_container_framing (rtl/dgsq/container_framing.py).

The bench plays the three neighbours, each after its own rules and nothing of the RTL:

* the DGSQ manager: releases (queue, credit, dst_node) on ``s_rel`` with random idle
  cycles, at most one per queue outstanding (the next only after that queue's report
  came back on ``m_done``); a free queue is now and then given another destination
  (a context freed and allocated again);
* the VOQ buffer: takes the releases on ``m_deq`` (random back-pressure) in order and
  sends 0..4 packets for each (0: an empty release) as descriptors on ``s_desc``
  (random idle cycles), then the release's report on ``s_done`` after a random delay
  (so a report may come before or after the framing has seen that release's
  descriptors: descriptors can lag the data when the sprayer stalls);
* the sprayer: takes ``m_meta`` with random back-pressure.

Checks: ``m_deq`` = the releases without dst_node, in order; ``m_done`` = the reports,
unchanged; one ``m_meta`` per packet, in order, with the destination its release had
when it was issued, dgsq = queue, ttl, len = stored length - 18, last; the counters.
"""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, SimTimeoutError, with_timeout

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.runner import test_params
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource

TIMEOUT_US = 1000


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


TAG = 18


class FramingBench:
    def __init__(self, dut, seed, releases, queues=8, empty_p=0.25):
        self.dut = dut
        self.p = test_params()
        self.rng = random.Random(seed)
        self.n_rel, self.queues, self.empty_p = releases, queues, empty_p
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.rel = FieldStreamSource(dut, "s_rel", dut.clk, fields=["queue", "credit", "dst_node"])
        self.desc = FieldStreamSource(dut, "s_desc", dut.clk, fields=["queue", "len", "last"])
        self.done = FieldStreamSource(dut, "s_done", dut.clk, fields=["queue", "bytes", "pkts"])
        self.deq = FieldStreamSink(dut, "m_deq", dut.clk, fields=["queue", "credit"])
        self.mdone = FieldStreamSink(dut, "m_done", dut.clk, fields=["queue", "bytes", "pkts"])
        self.meta = FieldStreamSink(dut, "m_meta", dut.clk, fields=["dst_node", "dgsq", "ttl", "len", "last"])
        self.dst = {q: self.rng.randrange(65536) for q in range(queues)}
        self.issued = deque()  # releases sent, for the VOQ model to check
        self.expect_meta = deque()
        self.reports = deque()  # (due clock, report) in release order
        self.sent_reports = []
        self.outstanding = set()
        self.empties = 0
        self.clock = 0

    def pauses(self, p):
        for s in (self.rel, self.desc, self.done, self.deq, self.mdone, self.meta):
            s.set_pause_generator(random_pause(self.rng, p))

    async def run(self):
        await reset_dut(self.dut)
        cocotb.start_soon(self._clock())
        cocotb.start_soon(self._voq())
        cocotb.start_soon(self._reporter())
        await within(self._manager(), "every release issued and reported back on m_done")
        await within(self._check_meta(), f"{len(self.expect_meta)} more m_meta descriptors")
        for _ in range(30):
            await RisingEdge(self.dut.clk)
        assert self.meta.empty(), "descriptors beyond the expected ones"
        assert self.deq.empty() and self.mdone.empty()
        st = self.dut
        assert int(st.stat_releases.value) == self.n_rel
        assert int(st.stat_empty_releases.value) == self.empties, (
            f"stat_empty_releases {int(st.stat_empty_releases.value)} != {self.empties}"
        )

    async def _clock(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.clock += 1

    async def _manager(self):
        sent = 0
        while sent < self.n_rel or self.outstanding:
            while not self.mdone.empty():
                got = self.mdone.queue.popleft()
                want = self.sent_reports.pop(0)
                assert got == want, f"m_done {got} != s_done {want}"
                self.outstanding.discard(got["queue"])
            free = [q for q in range(self.queues) if q not in self.outstanding]
            if sent < self.n_rel and free and len(self.issued) < 16:
                q = self.rng.choice(free)
                if self.rng.random() < 0.1:
                    self.dst[q] = self.rng.randrange(65536)  # context reused
                r = {"queue": q, "credit": self.rng.randrange(1 << 16), "dst_node": self.dst[q]}
                self.outstanding.add(q)
                self.issued.append(r)
                self.rel.send(r)
                sent += 1
            await RisingEdge(self.dut.clk)

    async def _voq(self):
        while True:
            got = await self.deq.recv()
            r = self.issued.popleft()
            assert got == {"queue": r["queue"], "credit": r["credit"]}, f"m_deq {got} != {r}"
            k = 0 if self.rng.random() < self.empty_p else self.rng.randrange(1, 5)
            self.empties += k == 0
            for j in range(k):
                stored = self.rng.choice([32, 78, 1518, self.rng.randrange(32, 9018)])
                self.desc.send({"queue": r["queue"], "len": stored, "last": int(j == k - 1)})
                self.expect_meta.append(
                    {
                        "dst_node": r["dst_node"],
                        "dgsq": r["queue"],
                        "ttl": self.p["ttl"],
                        "len": stored - TAG,
                        "last": int(j == k - 1),
                    }
                )
            rep = {"queue": r["queue"], "bytes": self.rng.randrange(1 << 16), "pkts": k}
            self.reports.append((self.clock + self.rng.randrange(0, 40), rep))

    async def _reporter(self):
        while True:
            await RisingEdge(self.dut.clk)
            if self.reports and self.reports[0][0] <= self.clock:
                _due, rep = self.reports.popleft()
                self.sent_reports.append(rep)
                self.done.send(rep)

    async def _check_meta(self):
        k = 0
        while self.expect_meta or not self.meta.empty():
            got = await self.meta.recv()
            want = self.expect_meta.popleft()
            assert got == want, f"m_meta {k}: {got} != {want}"
            k += 1
        assert k > self.n_rel, f"only {k} descriptors"


@cocotb.test()
async def test_random_releases(dut):
    """Idle cycles and back-pressure everywhere, a quarter of the releases empty."""
    tb = FramingBench(dut, 71, releases=400)
    tb.pauses(0.3)
    await tb.run()
    assert tb.empties > 40


@cocotb.test()
async def test_one_queue_empty_runs(dut):
    """One queue, many empty releases in a row (the case where only the report can tell
    the framing that a release sent nothing), and its destination changing."""
    tb = FramingBench(dut, 72, releases=200, queues=1, empty_p=0.6)
    tb.pauses(0.2)
    await tb.run()


@cocotb.test()
async def test_no_pauses(dut):
    """No idle cycles, no back-pressure."""
    tb = FramingBench(dut, 73, releases=200, empty_p=0.1)
    await tb.run()
