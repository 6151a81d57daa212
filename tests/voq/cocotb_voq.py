"""cocotb tests of the VOQ buffer (gse_voq_buffer) against sim/voq_model.py.

Every packet carries a 4-byte tag (queue, sequence) in its first bytes so the
scoreboard can identify it on the way out; the rest is random. Checks in every test:
contents and per-queue order of what leaves, the release rule (whole packets, the
credit may be overrun by the last packet only), the done reports, the drop counters
(global per reason, per queue, per tenant), that bad frames never leave, that every
queue ends empty with every cell back on the free list, that the accounting
invariant flag never rose, and that the sinks are empty at the end. The per-packet
records on ``m_desc`` are checked against what left ``m_axis`` (queue, length, ``last``
on a release's last packet), and against the model where a test predicts releases
exactly; a monitor checks that each packet's record was valid (or already taken) when
the packet's first beat left ``m_axis``.
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.runner import test_params
from opengse.sim.voq_model import DROP_REASONS, Packet, VOQModel, credit_bytes

P = test_params()
#: When the buffer reports a release (the model's releases are the same either way).
EARLY_REPORT = P.pop("early_report", False)
BPB = P["data_width"] // 8
CELLS = P["buffer_bytes"] // P["cell_bytes"]
CREDIT_UNIT = P["credit_unit"]
CREDIT_MAX_FIELD = (1 << P["credit_width"]) - 1
MAX_CREDIT = VOQModel(**P).max_credit  # larger credits count as this


def _bit(sig):
    """A 1-bit output as 0/1; X (a four-state simulator, before reset) reads 0."""
    return int(str(sig.value) == "1")


def credit_of(nbytes):
    return credit_bytes(nbytes, CREDIT_UNIT)


def model():
    return VOQModel(**P)


def pause(p_busy):
    while True:
        yield random.random() < p_busy


class VOQBench:
    def __init__(self, dut, seed=1):
        self.dut = dut
        random.seed(seed)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.meta_q = deque()
        self.deq_q = deque()
        self.done = deque()
        self.done_ready_p = 1.0
        self.early_reports = 0  # reports that came before their release's last beat left
        self.desc = deque()  # m_desc records taken: (queue, len, last)
        self.desc_ready_p = 1.0
        self.first_beats = 0  # packets whose first beat left m_axis
        self.desc_taken = 0
        self.seq = {}
        self.sent = {}  # tag -> Packet
        self.sent_order = {}  # queue -> list of tags in send order
        self.err_seen = False
        for sig in (dut.s_meta_valid, dut.s_deq_valid, dut.query_queue, dut.query_tenant):
            sig.value = 0
        dut.m_deq_done_ready.value = 1
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        cocotb.start_soon(self._meta_driver())
        cocotb.start_soon(self._deq_driver())
        cocotb.start_soon(self._done_monitor())
        cocotb.start_soon(self._desc_monitor())
        cocotb.start_soon(self._invariant_monitor())

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        while not int(self.dut.init_done.value):
            await RisingEdge(self.dut.clk)

    # -- drivers ---------------------------------------------------------------------
    async def _meta_driver(self):
        dut = self.dut
        while True:
            if not self.meta_q:
                dut.s_meta_valid.value = 0
                await RisingEdge(dut.clk)
                continue
            q, t, nbytes = self.meta_q[0]
            dut.s_meta_queue.value = q
            dut.s_meta_tenant.value = t
            dut.s_meta_bytes.value = nbytes & 0xFFFF
            dut.s_meta_valid.value = 1
            await RisingEdge(dut.clk)
            if _bit(dut.s_meta_ready):
                self.meta_q.popleft()

    async def _deq_driver(self):
        dut = self.dut
        while True:
            if not self.deq_q:
                dut.s_deq_valid.value = 0
                await RisingEdge(dut.clk)
                continue
            q, credit = self.deq_q[0]
            dut.s_deq_queue.value = q
            dut.s_deq_credit.value = credit
            dut.s_deq_valid.value = 1
            await RisingEdge(dut.clk)
            if _bit(dut.s_deq_ready):
                self.deq_q.popleft()

    async def _done_monitor(self):
        # Also checks when a report comes: by default only once its release's last
        # beat has left m_axis; with early_report at least one comes before (counted).
        dut = self.dut
        pkts_out = pkts_reported = 0
        while True:
            dut.m_deq_done_ready.value = int(random.random() < self.done_ready_p)
            await RisingEdge(dut.clk)
            if _bit(dut.m_axis_tvalid) and _bit(dut.m_axis_tready) and _bit(dut.m_axis_tlast):
                pkts_out += 1
            if _bit(dut.m_deq_done_valid) and _bit(dut.m_deq_done_ready):
                pkts_reported += int(dut.m_deq_done_pkts.value)
                if pkts_reported > pkts_out:
                    assert EARLY_REPORT, (
                        f"a release reported before its last beat left m_axis ({pkts_reported} "
                        f"packets reported, {pkts_out} sent)"
                    )
                    self.early_reports += 1
                self.done.append(
                    (
                        int(dut.m_deq_done_queue.value),
                        int(dut.m_deq_done_bytes.value),
                        int(dut.m_deq_done_pkts.value),
                    )
                )

    async def _desc_monitor(self):
        # Takes m_desc records (random back-pressure) and checks the timing promise:
        # when a packet's first beat leaves m_axis, its record is valid now or was taken.
        dut = self.dut
        in_pkt = False
        while True:
            dut.m_desc_ready.value = int(random.random() < self.desc_ready_p)
            await RisingEdge(dut.clk)
            if int(dut.rst.value):
                in_pkt, self.first_beats, self.desc_taken = False, 0, 0
                continue
            d_v, d_r = _bit(dut.m_desc_valid), _bit(dut.m_desc_ready)
            if _bit(dut.m_axis_tvalid) and _bit(dut.m_axis_tready):
                if not in_pkt:
                    self.first_beats += 1
                    assert self.desc_taken + d_v >= self.first_beats, (
                        f"packet {self.first_beats}: first beat before its m_desc record"
                    )
                in_pkt = not int(dut.m_axis_tlast.value)
            if d_v and d_r:
                self.desc_taken += 1
                self.desc.append(
                    (int(dut.m_desc_queue.value), int(dut.m_desc_len.value), bool(int(dut.m_desc_last.value)))
                )

    async def _invariant_monitor(self):
        # The RTL checks free + queued + in-flight == total (and no underflow) every
        # cycle into a sticky flag; here we also re-add the counters ourselves.
        dut = self.dut
        while True:
            await ClockCycles(dut.clk, 16)
            if int(dut.init_done.value):
                f = int(dut.stat_free_cells.value)
                qd = int(dut.stat_queued_cells.value)
                dq = int(dut.stat_deq_cells.value)
                assert f + qd + dq == CELLS, f"cells: free {f} + queued {qd} + deq {dq} != {CELLS}"
                assert not int(dut.stat_invariant_err.value), "stat_invariant_err rose"

    def set_backpressure(self, p_in_idle=0.0, p_out_pause=0.0):
        # Always a generator: replacing one by None would leave ``pause`` stuck where
        # the old generator left it.
        self.src.set_pause_generator(pause(p_in_idle))
        self.sink.set_pause_generator(pause(p_out_pause))

    # -- traffic ---------------------------------------------------------------------
    def make_packet(self, queue, tenant, length, bad=False):
        seq = self.seq.get(queue, 0)
        self.seq[queue] = seq + 1
        tag = (queue << 16) | (seq & 0xFFFF)
        head = tag.to_bytes(4, "little")
        length = max(length, 4)
        data = head + bytes(random.getrandbits(8) for _ in range(length - 4))
        pkt = Packet(queue, tenant, data, bad, tag)
        return pkt

    async def send(self, pkt):
        self.sent[pkt.tag] = pkt
        self.sent_order.setdefault(pkt.queue, []).append(pkt.tag)
        self.meta_q.append((pkt.queue, pkt.tenant, len(pkt.data)))
        frame = AxiStreamFrame(pkt.data, tuser=1 if pkt.bad else 0)
        await self.src.send(frame)

    def request(self, queue, credit):
        self.deq_q.append((queue, credit))

    def dump_state(self):
        out = {}
        for name in (
            "e_active",
            "e_fin",
            "e_cell_ok",
            "e_drop",
            "e_qc_st",
            "e_kk",
            "e_beat",
            "e_link_pend",
            "acct_state",
            "walker_state",
            "s_axis_tready",
            "s_axis_tvalid",
            "s_meta_valid",
            "s_deq_ready",
            "stat_free_cells",
            "stat_queued_cells",
            "stat_deq_cells",
            "stat_enq_cells",
            "e_fin_bad",
            "c_pend",
            "e_nxt_v",
            "s5_v",
            "e_pid",
            "queue_drops.fsm_state",
            "tenant_drops.fsm_state",
        ):
            for full in (name, "core." + name, "\\core." + name + " "):
                try:
                    out[name] = int(self.dut._id(full, extended=False).value)
                    break
                except Exception:
                    continue
        return out

    async def idle(self, extra=20, timeout=100000):
        """Wait until every input is consumed and the buffer's pipelines are quiet."""
        dut = self.dut
        n = 0
        while (
            self.meta_q
            or self.deq_q
            or not self.src.empty()
            or self.src.active
            or int(dut.stat_deq_cells.value)
            or int(dut.stat_enq_cells.value)
        ):
            await RisingEdge(dut.clk)
            n += 1
            assert n < timeout, (
                f"buffer stuck: {self.dump_state()} meta_q={len(self.meta_q)} "
                f"deq_q={len(self.deq_q)} src_empty={self.src.empty()} src_active={self.src.active}"
            )
        await ClockCycles(dut.clk, extra)

    async def query(self, queue=None, tenant=None):
        dut = self.dut
        if queue is not None:
            dut.query_queue.value = queue
        if tenant is not None:
            dut.query_tenant.value = tenant
        await RisingEdge(dut.clk)
        await RisingEdge(dut.clk)
        await Timer(1, "ns")
        out = {}
        if queue is not None:
            out.update(
                pkts=int(dut.query_pkts.value),
                bytes=int(dut.query_bytes.value),
                cells=int(dut.query_cells.value),
                drops=int(dut.query_drops.value),
            )
        if tenant is not None:
            out.update(tcells=int(dut.query_tenant_cells.value), tdrops=int(dut.query_tenant_drops.value))
        return out

    # -- scoreboard ------------------------------------------------------------------
    async def collect(self, n_releases, timeout=200000):
        """Wait for ``n_releases`` done reports; return [(q, bytes, pkts, frames)]."""
        dut = self.dut
        cycles = 0
        while len(self.done) < n_releases:
            await RisingEdge(dut.clk)
            cycles += 1
            assert cycles < timeout, f"timeout waiting for releases ({len(self.done)}/{n_releases})"
        out = []
        for _ in range(n_releases):
            q, nbytes, npkts = self.done.popleft()
            frames = []
            for _ in range(npkts):
                frames.append(await self.sink.recv())
            while len(self.desc) < npkts:
                await RisingEdge(dut.clk)
                cycles += 1
                assert cycles < timeout, f"timeout waiting for m_desc records ({len(self.desc)}/{npkts})"
            recs = self.last_records = [self.desc.popleft() for _ in range(npkts)]
            want = [(q, len(f.tdata), i == npkts - 1) for i, f in enumerate(frames)]
            assert recs == want, f"m_desc records {recs} != packets sent {want}"
            out.append((q, nbytes, npkts, frames))
        return out

    def check_release(self, q, credit, nbytes, npkts, frames, expected=None):
        # The report is the credit used: each packet's length rounded up to whole units.
        assert sum(credit_of(len(f.tdata)) for f in frames) == nbytes, "done bytes != credit used"
        if credit == 0:
            assert npkts == 0
        if npkts:
            last = credit_of(len(frames[-1].tdata))
            assert nbytes - last < min(credit, MAX_CREDIT), "released more than the credit allows"
        for f in frames:
            tag = int.from_bytes(bytes(f.tdata[:4]), "little")
            assert (tag >> 16) == q, f"frame of queue {tag >> 16} in a release of queue {q}"
            pkt = self.sent.get(tag)
            assert pkt is not None, f"unknown frame tag {tag:#x}"
            assert not pkt.bad, "a bad frame left the buffer"
            assert bytes(f.tdata) == pkt.data, f"frame {tag:#x} corrupted"
            assert not f.tuser, "tuser set on output"
        if expected is not None:
            got = [int.from_bytes(bytes(f.tdata[:4]), "little") for f in frames]
            want = [p.tag for p in expected]
            assert got == want, f"queue {q}: released {got}, model says {want}"

    async def check_counters(self, m, queues=None, tenants=None):
        dut = self.dut
        for r in DROP_REASONS:
            got = int(getattr(dut, f"stat_drop_{r}").value)
            assert got == m.drops[r], f"stat_drop_{r} {got} != model {m.drops[r]}"
        for q in queues if queues is not None else range(P["queues"]):
            got = await self.query(queue=q)
            assert got["drops"] == m.queue_drops[q], f"queue {q} drops {got['drops']} != {m.queue_drops[q]}"
            pk, by, ce = m.backlog(q)
            assert (got["pkts"], got["bytes"], got["cells"]) == (pk, by, ce), (
                f"queue {q} backlog {got} != model {(pk, by, ce)}"
            )
        for t in tenants if tenants is not None else range(P["tenants"]):
            got = await self.query(tenant=t)
            assert got["tdrops"] == m.tenant_drops[t], (
                f"tenant {t} drops {got['tdrops']} != {m.tenant_drops[t]}"
            )
            assert got["tcells"] == m.occ[t], f"tenant {t} cells {got['tcells']} != {m.occ[t]}"

    async def drain_all(self, queues, credit=None):
        """Release every queue until empty; return the releases."""
        credit = credit or (1 << P["credit_width"]) - 1
        rels = []
        for q in queues:
            while True:
                b = await self.query(queue=q)
                if b["pkts"] == 0:
                    break
                self.request(q, credit)
                rels += await self.collect(1)
        return rels

    async def final_checks(self):
        dut = self.dut
        await self.idle()
        assert int(dut.stat_free_cells.value) == CELLS, (
            f"leaked cells: free {int(dut.stat_free_cells.value)} of {CELLS}"
        )
        assert int(dut.stat_queued_cells.value) == 0
        assert int(dut.stat_deq_cells.value) == 0
        assert not int(dut.stat_invariant_err.value)
        assert self.sink.empty(), "frames left in the sink"
        assert not self.done, "done reports left over"
        if EARLY_REPORT:
            assert self.early_reports, "early_report: no release was reported before its last beat"


def rand_len(maxlen=None):
    maxlen = maxlen or min(1500, P["buffer_bytes"] // 4)
    r = random.random()
    if r < 0.4:
        return random.randint(60, 128)
    if r < 0.8:
        return random.randint(60, maxlen)
    return random.choice([60, 64, P["cell_bytes"], P["cell_bytes"] + 1, maxlen])


# ------------------------------------------------------------------------------------
@cocotb.test()
async def test_basic(dut):
    """A few packets through two queues, in order, exact lengths and keep."""
    tb = VOQBench(dut, seed=1)
    await tb.reset()
    m = model()
    for length in (60, 61, 64, 65, P["cell_bytes"], P["cell_bytes"] + 7, 300):
        for q in (0, 1):
            pkt = tb.make_packet(q, q, length)
            assert m.enqueue(pkt) is None
            await tb.send(pkt)
    await tb.idle()
    for q in (0, 1):
        b = await tb.query(queue=q)
        assert (b["pkts"], b["bytes"], b["cells"]) == m.backlog(q), (b, m.backlog(q))
    # credit 125 on queue 0 (60, 61, 64 B first): 3 packets in bytes, 2 in 64 B units
    for q, credit in ((0, 125), (1, 1), (0, 0), (0, 10000), (1, 10000), (1, 50)):
        exp = m.release(q, credit)
        tb.request(q, credit)
        ((rq, nb, npk, frames),) = await tb.collect(1)
        assert rq == q
        tb.check_release(q, credit, nb, npk, frames, exp)
    await tb.check_counters(m, queues=range(2), tenants=range(2))
    await tb.final_checks()


@cocotb.test()
async def test_phased_admission(dut):
    """Alternating fill and drain phases: admission and drop reasons predicted exactly."""
    tb = VOQBench(dut, seed=2)
    await tb.reset()
    m = model()
    nq = min(P["queues"], 8)
    nt = min(P["tenants"], 4)
    for phase in range(int(os.environ.get("VOQ_PHASES", "9"))):
        tb.set_backpressure(p_in_idle=0.2 * (phase % 2), p_out_pause=0.3 * (phase % 3 == 1))
        kind = phase % 3  # 0: anything; 1: one tenant on two queues; 2: one queue
        for _ in range(random.randint(20, 60)):
            q = random.randrange(nq) if kind == 0 else random.randrange(2) if kind == 1 else 2
            t = 0 if kind == 1 else random.randrange(nt)
            pkt = tb.make_packet(q, t, rand_len(), bad=random.random() < 0.08)
            m.enqueue(pkt)
            await tb.send(pkt)
        await tb.idle()
        await tb.check_counters(m, queues=range(nq), tenants=range(nt))
        for _ in range(random.randint(5, 15)):
            q = random.randrange(nq)
            credit = random.choice([0, 1, 64, 500, 1500, 4096, random.randrange(1 << P["credit_width"])])
            exp = m.release(q, credit)
            tb.request(q, credit)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            assert rq == q
            tb.check_release(q, credit, nb, npk, frames, exp)
        await tb.idle()
    for q in range(nq):
        while m.q[q]:
            exp = m.release(q, 65535)
            tb.request(q, 65535)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            tb.check_release(q, 65535, nb, npk, frames, exp)
    await tb.check_counters(m, queues=range(nq), tenants=range(nt))
    # every drop reason happened (and matched the model) at least once
    assert all(m.drops[r] > 0 for r in DROP_REASONS), m.drops
    dut._log.info("phased: drops %s, enqueued %d", m.drops, m.enq_pkts)
    await tb.final_checks()


@cocotb.test()
async def test_keep_zero_admission(dut):
    """A last beat with ``tkeep == 0`` counts 0 bytes and charges no cell (issue 18).

    The buffer is filled with one-cell packets, interleaved with bad frames whose
    counted bytes fill whole cells (0, 1 cell, 3 cells: 0, 64, 192 B with 64 B cells)
    followed by one beat with ``tkeep == 0`` (``tuser`` clear: bad only for the empty
    beat). The model charges such a frame its counted cells only, so it is dropped as
    ``bad`` unless one of those cells fails admission. As the buffer nearly fills,
    some frames would fail admission with one more cell (the beat that begins a new
    cell): the test asserts that this happened for each length, so a buffer that charged
    that cell (and dropped them as ``full``/``dt``) fails the exact counter check."""
    tb = VOQBench(dut, seed=18)
    tb.set_backpressure(p_in_idle=0.3)
    await tb.reset()
    m = model()
    cb, W = P["cell_bytes"], P["data_width"] // 8
    nq, nt = min(P["queues"], 8), min(P["tenants"], 4)
    lengths = (0, cb, 3 * cb)
    tight = dict.fromkeys(lengths, 0)  # frames one more cell would have dropped otherwise

    async def keep_zero(q, t, nbytes):
        pkt = tb.make_packet(q, t, 4, bad=True)  # its tag; data set below
        pkt.data = (pkt.data + bytes(random.getrandbits(8) for _ in range(nbytes)))[:nbytes]
        c = m.cells_of(nbytes)
        if m.admit_reason(q, t, c) is None and m.admit_reason(q, t, c + 1) is not None:
            tight[nbytes] += 1
        reason = m.enqueue(pkt)
        assert reason is not None
        tb.sent[pkt.tag] = pkt
        tb.sent_order.setdefault(q, []).append(pkt.tag)
        tb.meta_q.append((q, t, nbytes))
        pad = bytes(random.getrandbits(8) for _ in range(W))
        await tb.src.send(AxiStreamFrame(pkt.data + pad, tkeep=[1] * nbytes + [0] * W, tuser=0))
        return reason

    for step in range(3 * CELLS):
        q, t = random.randrange(nq), random.randrange(nt)
        pkt = tb.make_packet(q, t, cb)
        m.enqueue(pkt)
        await tb.send(pkt)
        for nbytes in lengths:
            await keep_zero(random.randrange(nq), random.randrange(nt), nbytes)
        await tb.idle(extra=4)
        await tb.check_counters(m, queues=[], tenants=[])
    await tb.check_counters(m, queues=range(nq), tenants=range(nt))
    dut._log.info("keep_zero: drops %s, free %d, tight %s", m.drops, m.free, tight)
    assert all(tight[n] > 0 for n in lengths), f"no frame at the edge for some length: {tight}"
    assert m.drops["full"] + m.drops["dt"] > 0, m.drops
    for q in range(nq):
        while m.q[q]:
            exp = m.release(q, MAX_CREDIT)
            tb.request(q, MAX_CREDIT)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            tb.check_release(q, MAX_CREDIT, nb, npk, frames, exp)
    await tb.check_counters(m, queues=range(nq), tenants=range(nt))
    await tb.final_checks()


async def concurrent_run(tb, n_packets, nq, nt, p_bad=0.05, lens=rand_len):
    """Enqueue and dequeue at once; check order/contents/counters from the outcome."""
    dut = tb.dut
    rels = []
    pending = 0

    async def requester():
        nonlocal pending
        while not stop:
            if len(tb.deq_q) < 2:
                tb.request(random.randrange(nq), random.choice([1, 500, 2000, 4096, 9000]))
                pending += 1
            await RisingEdge(dut.clk)

    stop = False
    req = cocotb.start_soon(requester())

    async def collector():
        nonlocal pending
        while True:
            while not tb.done:
                await RisingEdge(dut.clk)
            r = await tb.collect(1)
            if os.environ.get("VOQ_TRACE"):
                dut._log.info("release %s", r[0][:3])
            rels.extend(r)
            pending -= 1

    col = cocotb.start_soon(collector())

    async def tracer():
        while True:
            await ClockCycles(dut.clk, 2000)
            dut._log.info(
                "trace %s deq_q=%d pending=%d done=%d", tb.dump_state(), len(tb.deq_q), pending, len(tb.done)
            )

    if os.environ.get("VOQ_TRACE"):
        cocotb.start_soon(tracer())
    for i in range(n_packets):
        q = random.randrange(nq)
        t = random.randrange(nt)
        pkt = tb.make_packet(q, t, lens(), bad=random.random() < p_bad)
        await tb.send(pkt)
    # send() only queues the frames: keep requesting until they have all gone in
    while tb.meta_q or not tb.src.empty() or tb.src.active:
        await RisingEdge(dut.clk)
    stop = True
    await tb.idle()
    while pending:
        await RisingEdge(dut.clk)
    col.cancel()
    req.cancel()
    # drain what is left
    for q in range(nq):
        while True:
            b = await tb.query(queue=q)
            if b["pkts"] == 0:
                break
            tb.request(q, 65535)
            rels += await tb.collect(1)
    # per-queue order: delivered tags must be increasing (a subsequence of what was sent)
    delivered = set()
    last_seq = {}
    for q, nb, npk, frames in rels:
        tb.check_release(q, 1 << 30, nb, npk, frames)  # credit checked loosely here
        for f in frames:
            tag = int.from_bytes(bytes(f.tdata[:4]), "little")
            assert tag not in delivered, f"frame {tag:#x} delivered twice"
            delivered.add(tag)
            seq = tag & 0xFFFF
            assert seq > last_seq.get(q, -1), f"queue {q} out of order"
            last_seq[q] = seq
    dropped = [p for tag, p in tb.sent.items() if tag not in delivered]
    assert all(not p.bad for tag, p in tb.sent.items() if tag in delivered)
    total_drops = sum(int(getattr(dut, f"stat_drop_{r}").value) for r in DROP_REASONS)
    assert total_drops == len(dropped), f"drop counters {total_drops} != dropped {len(dropped)}"
    assert int(dut.stat_drop_bad.value) <= sum(p.bad for p in tb.sent.values())
    assert int(dut.stat_enq_pkts.value) == len(delivered)
    assert int(dut.stat_deq_pkts.value) == len(delivered)
    for q in range(nq):
        b = await tb.query(queue=q)
        assert b["drops"] == sum(1 for p in dropped if p.queue == q)
    for t in range(nt):
        b = await tb.query(tenant=t)
        assert b["tdrops"] == sum(1 for p in dropped if p.tenant == t)
        assert b["tcells"] == 0
    return len(delivered), len(dropped)


@cocotb.test()
async def test_concurrent_backpressure(dut):
    """Random packets and releases at the same time, random back-pressure both sides."""
    tb = VOQBench(dut, seed=3)
    await tb.reset()
    tb.set_backpressure(p_in_idle=0.1, p_out_pause=0.3)
    tb.done_ready_p = 0.7
    n = int(os.environ.get("VOQ_CONCURRENT", "600"))
    got, dropped = await concurrent_run(tb, n, min(P["queues"], 8), min(P["tenants"], 4))
    dut._log.info(
        "concurrent: %d delivered, %d dropped, by reason %s",
        got,
        dropped,
        {r: int(getattr(dut, f"stat_drop_{r}").value) for r in DROP_REASONS},
    )
    assert got > n // 4
    await tb.final_checks()


@cocotb.test()
async def test_tenant_isolation(dut):
    """Tenant 0 floods with no dequeue; tenant 1 stays within its reservation: no drop."""
    tb = VOQBench(dut, seed=4)
    await tb.reset()
    m = model()
    res = P["tenant_reserved_cells"]
    cell = P["cell_bytes"]
    nq = min(P["queues"], 4)
    victim_cells = 0
    for i in range(400):
        pkt = tb.make_packet(random.randrange(1, nq), 0, random.randint(cell, 3 * cell))
        m.enqueue(pkt)
        await tb.send(pkt)
        if i % 20 == 19 and victim_cells + 1 <= res:
            v = tb.make_packet(0, 1, random.randint(60, cell))
            assert m.enqueue(v) is None
            victim_cells += 1
            await tb.send(v)
    await tb.idle()
    await tb.check_counters(m, queues=range(nq), tenants=range(2))
    t1 = await tb.query(tenant=1)
    t0 = await tb.query(tenant=0)
    assert t1["tdrops"] == 0 and t1["tcells"] == victim_cells, t1
    assert t0["tdrops"] > 0, t0
    for q in range(nq):
        while m.q[q]:
            exp = m.release(q, 65535)
            tb.request(q, 65535)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            tb.check_release(q, 65535, nb, npk, frames, exp)
    await tb.final_checks()


@cocotb.test()
async def test_reset_midstream(dut):
    """A reset in the middle of traffic leaves a clean, empty buffer."""
    tb = VOQBench(dut, seed=5)
    await tb.reset()
    for _ in range(20):
        tb.meta_q.append((1, 1, 300))
        cocotb.start_soon(tb.src.send(AxiStreamFrame(bytes(300))))
    tb.request(1, 5000)
    await ClockCycles(dut.clk, 150)
    tb.meta_q.clear()
    tb.deq_q.clear()
    tb.src.clear()
    await tb.reset()
    tb.sink.clear()
    tb.done.clear()
    tb.desc.clear()
    await ClockCycles(dut.clk, 10)
    assert int(dut.stat_free_cells.value) == CELLS
    b = await tb.query(queue=1)
    assert b["pkts"] == 0 and b["drops"] == 0
    tb.sent.clear()
    m = model()
    pkt = tb.make_packet(2, 0, 200)
    m.enqueue(pkt)
    await tb.send(pkt)
    await tb.idle()
    exp = m.release(2, 100)
    tb.request(2, 100)
    ((rq, nb, npk, frames),) = await tb.collect(1)
    tb.check_release(2, 100, nb, npk, frames, exp)
    await tb.final_checks()


@cocotb.test()
async def test_emitted_packets(dut):
    """m_desc: one record per packet leaving m_axis, its length and ``last`` (the last
    packet of its release: credit used up or queue empty) as the model predicts, with
    random back-pressure on m_axis, m_desc and m_deq_done; each record valid by its
    packet's first beat (the monitor)."""
    tb = VOQBench(dut, seed=6)
    await tb.reset()
    m = model()
    tb.desc_ready_p, tb.done_ready_p = 0.4, 0.7
    nq, nt = min(P["queues"], 4), min(P["tenants"], 4)
    lasts, multi = set(), 0
    for phase in range(4):
        tb.set_backpressure(p_in_idle=0.1, p_out_pause=0.2 + 0.2 * phase)
        for _ in range(40):
            pkt = tb.make_packet(
                random.randrange(nq), random.randrange(nt), rand_len(), bad=random.random() < 0.05
            )
            m.enqueue(pkt)
            await tb.send(pkt)
        await tb.idle()
        for _ in range(12):
            q = random.randrange(nq)
            credit = random.choice([1, 64, 200, 1000, 3000, CREDIT_MAX_FIELD])
            exp = m.release(q, credit)
            tb.request(q, credit)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            tb.check_release(q, credit, nb, npk, frames, exp)
            assert tb.last_records == VOQModel.emitted(exp) if exp else True, (
                f"m_desc {tb.last_records} != model {VOQModel.emitted(exp)}"
            )
            if npk == 0:
                tb.last_records = []
            lasts.update(r[2] for r in tb.last_records)
            multi += npk > 1
    for q in range(nq):
        while m.q[q]:
            exp = m.release(q, CREDIT_MAX_FIELD)
            tb.request(q, CREDIT_MAX_FIELD)
            ((rq, nb, npk, frames),) = await tb.collect(1)
            tb.check_release(q, CREDIT_MAX_FIELD, nb, npk, frames, exp)
            assert tb.last_records == VOQModel.emitted(exp)
    assert lasts == {False, True} and multi > 0, (lasts, multi)
    assert tb.desc_taken == tb.first_beats == m.deq_pkts, (tb.desc_taken, tb.first_beats, m.deq_pkts)
    await tb.final_checks()
    assert not tb.desc, "m_desc records left over"


@cocotb.test()
async def test_soak(dut):
    """Soak: VOQ_SOAK packets (default 10000) of 60-200 B to random queues/tenants, 1%
    bad, random releases and back-pressure, with one lean driver coroutine (no
    cocotbext-axi) so Python touches each cycle once. Ends with every queue drained
    and every cell back on the free list; every delivered packet checked byte by byte
    and in per-queue order; delivered + drops == sent."""
    n_pkts = int(os.environ.get("VOQ_SOAK", "10000"))
    rng = random.Random(11)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for sig in (dut.s_meta_valid, dut.s_deq_valid, dut.s_axis_tvalid, dut.query_queue, dut.query_tenant):
        sig.value = 0
    dut.m_axis_tready.value = 1
    dut.m_deq_done_ready.value = 1
    dut.m_desc_ready.value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    while True:
        await RisingEdge(dut.clk)
        if int(dut.init_done.value):
            break
    nq, nt = min(P["queues"], 8), min(P["tenants"], 4)
    full_keep = (1 << BPB) - 1

    def packet(i):
        q, t = rng.randrange(nq), rng.randrange(nt)
        length = rng.randint(60, 200)
        bad = rng.random() < 0.01
        data = i.to_bytes(4, "little") + rng.randbytes(length - 4)
        beats = []
        for off in range(0, length, BPB):
            chunk = data[off : off + BPB]
            last = off + BPB >= length
            beats.append(
                (
                    int.from_bytes(chunk, "little"),
                    (1 << len(chunk)) - 1 if last else full_keep,
                    int(last),
                    int(bad and last),
                )
            )
        return q, t, bad, data, beats

    expect = {}  # tag -> (queue, data)
    sent_bad = 0
    last_tag = {}  # queue -> last tag delivered
    delivered = 0
    i_pkt, beats, bi = 0, None, 0
    out_buf = bytearray()
    cycle = 0
    stats_every = 4096
    s_valid = False
    deq_pending = False
    while True:
        # ---- drive inputs for this cycle ----
        if beats is None and i_pkt < n_pkts:
            q, t, bad, data, beats = packet(i_pkt)
            expect[i_pkt] = (q, data, bad)
            sent_bad += bad
            bi = 0
            dut.s_meta_queue.value = q
            dut.s_meta_tenant.value = t
            i_pkt += 1
        idle_in = rng.random() < 0.05
        if beats is not None and not idle_in:
            d, k, l, u = beats[bi]
            dut.s_axis_tdata.value = d
            dut.s_axis_tkeep.value = k
            dut.s_axis_tlast.value = l
            dut.s_axis_tuser.value = u
            dut.s_axis_tvalid.value = 1
            dut.s_meta_valid.value = int(bi == 0)
            s_valid = True
        else:
            dut.s_axis_tvalid.value = 0
            dut.s_meta_valid.value = 0
            s_valid = False
        if not deq_pending and rng.random() < 0.3:
            dut.s_deq_queue.value = rng.randrange(nq)
            dut.s_deq_credit.value = rng.choice((256, 1024, 4096))
            dut.s_deq_valid.value = 1
            deq_pending = True
        ready_out = rng.random() < 0.9
        dut.m_axis_tready.value = int(ready_out)
        await RisingEdge(dut.clk)
        cycle += 1
        # ---- sample handshakes ----
        if s_valid and _bit(dut.s_axis_tready):
            bi += 1
            if bi == len(beats):
                beats = None
        if deq_pending and _bit(dut.s_deq_ready):
            deq_pending = False
            dut.s_deq_valid.value = 0
        if ready_out and _bit(dut.m_axis_tvalid):
            keep = int(dut.m_axis_tkeep.value)
            nbytes = bin(keep).count("1")
            out_buf += int(dut.m_axis_tdata.value).to_bytes(BPB, "little")[:nbytes]
            if int(dut.m_axis_tlast.value):
                tag = int.from_bytes(out_buf[:4], "little")
                q, data, bad = expect.pop(tag)
                assert not bad, f"bad packet {tag} delivered"
                assert bytes(out_buf) == data, f"packet {tag} corrupted"
                assert tag > last_tag.get(q, -1), f"queue {q} out of order"
                last_tag[q] = tag
                delivered += 1
                out_buf = bytearray()
        if cycle % stats_every == 0:
            assert not int(dut.stat_invariant_err.value), "stat_invariant_err"
            f, qd, dq = (
                int(dut.stat_free_cells.value),
                int(dut.stat_queued_cells.value),
                int(dut.stat_deq_cells.value),
            )
            assert f + qd + dq == CELLS
        if i_pkt >= n_pkts and beats is None:
            break
    # ---- drain: keep releasing every queue until the buffer is empty ----
    dut.s_axis_tvalid.value = 0
    dut.s_meta_valid.value = 0
    dut.m_axis_tready.value = 1
    qi = 0
    quiet = 0
    while quiet < 200:
        dut.s_deq_queue.value = qi % nq
        dut.s_deq_credit.value = 65535
        dut.s_deq_valid.value = 1
        await RisingEdge(dut.clk)
        if _bit(dut.s_deq_ready):
            qi += 1
        busy = int(dut.stat_queued_cells.value) or int(dut.stat_deq_cells.value)
        if _bit(dut.m_axis_tvalid):
            keep = int(dut.m_axis_tkeep.value)
            out_buf += int(dut.m_axis_tdata.value).to_bytes(BPB, "little")[: bin(keep).count("1")]
            if int(dut.m_axis_tlast.value):
                tag = int.from_bytes(out_buf[:4], "little")
                q, data, bad = expect.pop(tag)
                assert not bad and bytes(out_buf) == data
                assert tag > last_tag.get(q, -1)
                last_tag[q] = tag
                delivered += 1
                out_buf = bytearray()
            busy = True
        quiet = 0 if busy else quiet + 1
    dut.s_deq_valid.value = 0
    await ClockCycles(dut.clk, 20)
    drops = {r: int(getattr(dut, f"stat_drop_{r}").value) for r in DROP_REASONS}
    dropped = len(expect)
    assert sum(drops.values()) == dropped, f"drops {drops} != {dropped} packets not delivered"
    assert drops["bad"] <= sent_bad
    assert int(dut.stat_enq_pkts.value) == delivered == int(dut.stat_deq_pkts.value)
    assert int(dut.stat_free_cells.value) == CELLS, "cells leaked"
    assert int(dut.stat_queued_cells.value) == 0 and int(dut.stat_deq_cells.value) == 0
    assert not int(dut.stat_invariant_err.value)
    dut._log.info("soak: %d packets, %d delivered, drops %s, %d cycles", n_pkts, delivered, drops, cycle)
