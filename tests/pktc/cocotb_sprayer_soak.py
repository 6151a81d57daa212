"""Hostile-input soak of the container sprayer (opengse.sim.soak; issue 18).

One lean coroutine drives every input and watches every output each clock:

* ``s_axis``: N frames from :meth:`HostileFrames.fabric` (1 byte to 10 kB, every
  malformed GSE header reason, ``tuser`` on the last beat or an earlier one,
  ``tkeep == 0`` on a last beat, non-contiguous ``tkeep``), grouped in containers of
  1 to 4 packets, with random idle clocks;
* ``s_meta``: one descriptor per packet with hostile fields (``dst_node`` any 16 bits,
  so destinations differing above the table's index bits share a counter; ``ttl`` 0;
  ``len`` unrelated to the frame), offered *misaligned*: often ahead of its frame,
  sometimes only many clocks after the frame's first beat waits (a frame without
  ``s_meta``), and sometimes alone for a while (``s_meta`` without a frame);
* ``s_ctrl``: about one control frame per 8 data frames, hostile too (any bytes,
  GRANT/REQUEST-shaped for unknown queues, odd ``tkeep``, ``tuser``), passed unchanged;
* ``healthy``: links leave and rejoin at random (also in mid-container), and now and
  then every link is down for a while with traffic waiting; ``avoid``: random bits
  (spurious, changing every few clocks); every uplink's ``tready`` random, with
  occasional long stalls of one uplink.

The reference is the sprayer's documented behaviour, written from the brief's header
byte table (not from the RTL): the sprayer is one pipeline register, so the output
beats leave in exactly the order the input beats were taken (data and control); a data
packet's GSE header bytes 15 (flags: FIRST, LAST, input CE kept, the rest 0), 20-21
(``dst_node``), 23 (``ttl``), 24-25 (container ``seq``), 26-27 (``len``), 28-29
(``dgsq``) are stamped, ``dst_node``/``ttl``/``dgsq`` from the container's first
descriptor, ``seq`` per destination (low log2(nodes) bits of ``dst_node``) from 0 after
reset; every other byte (where ``tkeep`` is set), ``tkeep``, ``tlast`` and ``tuser``
unchanged. Checked per beat, plus: a container's packets all on one uplink; a container
or control frame starts only on an uplink healthy 2 clocks before (the documented
staleness of round-robin); ``busy`` at most one bit.

Each epoch (N / EPOCHS frames) asserts: progress (no input beat taken and no output beat
for ``STALL`` clocks while work is queued fails the test, naming the port); conservation
(every frame and control frame delivered exactly once; ``stat_containers_*`` sum ==
containers sent; ``stat_bytes_<i>`` == the ``tkeep`` bytes that left on uplink i, and
their sum == those sent; ``stat_ctrl`` == control frames sent; ``stat_stall_no_uplink``
at least the clocks the bench held every link down with work waiting, less the
staleness); full return (``busy`` 0, no output beat pending). Between epochs a burst of
traffic is cut by a reset at a random clock (mid-packet as a rule); after it: no stale
output beat while the seq table clears, every counter 0, and the next epoch's seqs
restart at 0 (the stamp check)."""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.cocotb_util import WaitTimeout
from opengse.sim.runner import test_params
from opengse.sim.soak import HostileFrames, ReasonTally, soak_inputs

EPOCHS = 4
# SPRAYER_SOAK_STUCK=1: every uplink's tready held low, a deliberately stuck consumer
# that must fail the soak within STALL clocks (test_sprayer_soak.py)
STUCK = bool(int(os.environ.get("SPRAYER_SOAK_STUCK", "0")))
STALL = 2_000 if STUCK else 20_000  # clocks without a beat moving while work is queued: a hang
# frame byte offsets of the stamped GSE header fields (brief: header at bytes 14..31)
FLAGS, DST, TTL, SEQ, LEN, DGSQ = 15, 20, 23, 24, 26, 28
FIRST, LAST, CE = 1, 2, 4


def beats_of(h, W):
    """A :class:`Hostile` frame as beats: [data (int, lane 0 = first byte), keep bits,
    user, last, bytes (the beat's W bytes)]."""
    f = h.frame
    data, keep, user = bytes(f.tdata), f.tkeep, f.tuser
    out = []
    for s in range(0, len(data), W):
        chunk = data[s : s + W]
        chunk = chunk + bytes(W - len(chunk))
        k = keep[s : s + W]
        kb = sum(1 << i for i, v in enumerate(k) if v)
        u = int(any(user[s : s + W]))
        out.append([chunk, kb, u, int(s + W >= len(data))])
    return out


def stamp(beats, W, first, last, dst, ttl, seq, ln, dgsq):
    """The expected output beats of a data packet (brief byte table)."""
    raw = bytearray(b"".join(b[0] for b in beats))
    ce = raw[FLAGS] & CE if len(raw) > FLAGS else 0
    fields = {FLAGS: bytes([(FIRST if first else 0) | (LAST if last else 0) | ce])}
    fields[DST] = dst.to_bytes(2, "big")
    fields[TTL] = bytes([ttl])
    fields[SEQ] = seq.to_bytes(2, "big")
    fields[LEN] = ln.to_bytes(2, "big")
    fields[DGSQ] = dgsq.to_bytes(2, "big")
    for off, val in fields.items():
        for k, byte in enumerate(val):
            if off + k < len(raw):
                raw[off + k] = byte
    return [[bytes(raw[i * W : (i + 1) * W])] + b[1:] for i, b in enumerate(beats)]


def masked(data, keep, W):
    return bytes(data[i] if keep >> i & 1 else 0 for i in range(W))


class SoakTB:
    def __init__(self, dut, rng):
        self.dut = dut
        self.rng = rng
        p = test_params()
        self.U, self.nodes, self.W = p["uplinks"], p["nodes"], p["data_width"] // 8
        self.gen = HostileFrames(rng, self.W, hostile=0.7)
        self.ups = [{s: getattr(dut, f"m_axis_{i}_t{s}") for s in ("valid", "ready")} for i in range(self.U)]
        self.o_data, self.o_keep = dut.m_axis_0_tdata, dut.m_axis_0_tkeep
        self.o_last, self.o_user = dut.m_axis_0_tlast, dut.m_axis_0_tuser
        self.clock = 0
        self.tally = ReasonTally()
        self.all_down_clocks = 0  # clocks every link was held down with work waiting

    # ---- one epoch's traffic ----------------------------------------------------------
    def make_traffic(self, n_frames):
        """Data packets (grouped in containers, each with its descriptor) and control
        frames, interleaved as queued: [("d", beats, meta, label) | ("c", beats, label)]."""
        r, W = self.rng, self.W
        items = []
        left = n_frames
        n_ctrl = n_cont = 0
        while left > 0:
            npk = min(left, r.choice((1, 1, 2, 3, 4)))
            dst = r.choice((r.randrange(65536), r.randrange(self.nodes), 3, 3 | r.randrange(1, 4096) << 4))
            dgsq, ttl = r.randrange(65536), r.choice((0, 1, 64, 255, r.randrange(256)))
            for k in range(npk):
                h = self.gen.fabric()
                self.tally.add(h.label)
                meta = {
                    "dst_node": dst if k == 0 else r.randrange(65536),  # later ones ignored
                    "dgsq": dgsq if k == 0 else r.randrange(65536),
                    "ttl": ttl if k == 0 else r.randrange(256),
                    "len": r.choice((len(h.frame.tdata), r.randrange(65536), 0, 65535)),
                    "last": int(k == npk - 1),
                }
                items.append(["d", beats_of(h, W), meta, h.label])
                if r.random() < 0.12:
                    c = self.ctrl_frame()
                    items.append(["c", beats_of(c, W), c.label])
                    n_ctrl += 1
            n_cont += 1
            left -= npk
        return items, n_cont, n_ctrl

    def ctrl_frame(self):
        r, g = self.rng, self.gen
        kind = r.random()
        if kind < 0.4:  # REQUEST/GRANT-shaped, for unknown queues and nodes
            raw = g.gse(42, type=r.choice((1, 2)), dgsq=r.randrange(65536), len=r.randrange(65536))
            return g.shape(raw, "ctl_unknown_queue", r.random() < 0.1)
        h = g.fabric()
        if len(h.frame.tdata) > 600:  # control frames are short; keep the big ones as data
            h = g.shape(g.plain(r.randint(1, 100)), "ctl_junk", r.random() < 0.1)
        h.label = "ctl_" + h.label
        return h

    # ---- the run ----------------------------------------------------------------------
    async def run(self, items, max_clocks=None, check=True):
        """Drive ``items`` until all delivered (``max_clocks`` None) or for ``max_clocks``
        clocks (a burst to be cut by a reset: nothing checked). Returns the epoch's
        ledger."""
        d, r, U, W = self.dut, self.rng, self.U, self.W
        data_q = deque(list(it) for it in items if it[0] == "d")
        ctrl_q = deque(it for it in items if it[0] == "c")
        # ctrl frames are offered after the data frame they were queued behind
        ctrl_after = deque()
        seen_d = 0
        for it in items:
            if it[0] == "d":
                seen_d += 1
            else:
                ctrl_after.append(seen_d)
        n_data_total = seen_d
        meta_q = deque(it[2] for it in data_q)
        inflight = deque()  # expected output beats in order: (kind, id, beat, uplink-check)
        seqs = {}
        cont = None  # model state of the container being taken: [first_meta, seq, npk, id]
        cont_id = -1
        cont_up = {}
        d_beat = d_cur = None  # current data frame (beats) and index into it
        d_taken = 0  # data frames whose first beat was taken
        d_done = 0
        c_cur = None
        c_beat = 0
        c_taken = 0
        m_cur = None
        m_hold = 0  # clocks to hold the next descriptor back (a frame without s_meta)
        delivered_d = delivered_c = 0
        ub = [0] * U  # tkeep bytes out per uplink
        in_bytes = 0
        healthy = (1 << U) - 1
        hist = deque([healthy] * 4, maxlen=4)  # healthy as driven, last 4 clocks
        avoid = 0
        down_all = 0
        quiet = 0
        clocks = 0
        ready = [None] * U
        last_h = last_a = None
        d_shown = c_shown = (None, 0)
        m_shown = None
        last_in = [None, None, None, None, None, None]  # keep, user, last, valid, meta valid, ctrl valid
        meta_h = {k: getattr(d, f"s_meta_{k}") for k in ("dst_node", "dgsq", "ttl", "len", "last")}
        stall_up, stall_left = None, 0
        p_idle = 0.15
        while True:
            if max_clocks is None:
                if d_done == n_data_total and not ctrl_q and c_cur is None and not inflight:
                    break
            elif clocks >= max_clocks:
                break
            clocks += 1
            # -- control inputs: links, avoid, readies -----------------------------------
            if down_all:
                down_all -= 1
                healthy = 0
                if not down_all:
                    healthy = (1 << U) - 1
            elif r.random() < 0.0005:
                down_all = r.randint(20, 200)
                healthy = 0
            elif r.random() < 0.02:
                healthy ^= 1 << r.randrange(U)
                if not healthy:
                    healthy = 1 << r.randrange(U)
            if r.random() < 0.1:
                avoid = r.randrange(1 << U)
            if stall_left:
                stall_left -= 1
            elif r.random() < 0.0005:
                stall_up, stall_left = r.randrange(U), r.randint(50, 500)
            else:
                stall_up = None
            for i in range(U):
                rd = int(r.random() < 0.8 and i != stall_up and not STUCK)
                if rd != ready[i]:
                    ready[i] = rd
                    self.ups[i]["ready"].value = rd
            if healthy != last_h:
                d.healthy.value = last_h = healthy
            if avoid != last_a:
                d.avoid.value = last_a = avoid
            # -- s_axis --------------------------------------------------------------------
            if d_cur is None and data_q and r.random() >= p_idle:
                d_cur, d_beat = data_q.popleft(), 0
            if d_cur is not None and (d_cur is not d_shown[0] or d_beat != d_shown[1]):
                d_shown = (d_cur, d_beat)
                b = d_cur[1][d_beat]
                d.s_axis_tdata.value = int.from_bytes(b[0], "little")
                if b[1] != last_in[0]:
                    d.s_axis_tkeep.value = last_in[0] = b[1]
                if b[2] != last_in[1]:
                    d.s_axis_tuser.value = last_in[1] = b[2]
                if b[3] != last_in[2]:
                    d.s_axis_tlast.value = last_in[2] = b[3]
            if (d_cur is not None) != last_in[3]:
                last_in[3] = d_cur is not None
                d.s_axis_tvalid.value = int(last_in[3])
            # -- s_meta: ahead, late, or alone ---------------------------------------------
            if m_cur is None and meta_q:
                if m_hold:
                    m_hold -= 1
                elif r.random() < 0.03:
                    m_hold = r.randint(1, 40)  # the frame (if any) waits without s_meta
                else:
                    m_cur = meta_q.popleft()
            if m_cur is not None and m_cur is not m_shown:
                m_shown = m_cur
                for k, v in m_cur.items():
                    meta_h[k].value = v
            if (m_cur is not None) != last_in[4]:
                last_in[4] = m_cur is not None
                d.s_meta_valid.value = int(last_in[4])
            # -- s_ctrl ---------------------------------------------------------------------
            if c_cur is None and ctrl_q and ctrl_after[0] <= d_taken and r.random() >= p_idle:
                c_cur, c_beat = ctrl_q.popleft(), 0
                ctrl_after.popleft()
            if c_cur is not None and (c_cur is not c_shown[0] or c_beat != c_shown[1]):
                c_shown = (c_cur, c_beat)
                b = c_cur[1][c_beat]
                d.s_ctrl_tdata.value = int.from_bytes(b[0], "little")
                d.s_ctrl_tkeep.value = b[1]
                d.s_ctrl_tuser.value = b[2]
                d.s_ctrl_tlast.value = b[3]
            if (c_cur is not None) != last_in[5]:
                last_in[5] = c_cur is not None
                d.s_ctrl_tvalid.value = int(last_in[5])
            hist.append(healthy)

            await ReadOnly()
            t_d = d_cur is not None and int(d.s_axis_tready.value)
            t_m = m_cur is not None and int(d.s_meta_ready.value)
            t_c = c_cur is not None and int(d.s_ctrl_tready.value)
            out_u = None
            for i in range(U):
                if ready[i] and int(self.ups[i]["valid"].value):
                    assert out_u is None, f"beats on uplinks {out_u} and {i} in one clock"
                    out_u = i
            if out_u is not None:
                o = (
                    int(self.o_data.value).to_bytes(W, "little"),
                    int(self.o_keep.value),
                    int(self.o_user.value),
                    int(self.o_last.value),
                )
            busy = int(d.busy.value)
            await RisingEdge(d.clk)
            self.clock += 1
            assert busy & (busy - 1) == 0, f"busy {busy:#x}: more than one uplink"
            # -- the edge just passed: inputs --------------------------------------------------
            if t_m and not (t_d and d_beat == 0):
                raise AssertionError(f"s_meta taken without a first beat (frame {d_taken})")
            if t_d:
                b = d_cur[1][d_beat]
                in_bytes += bin(b[1]).count("1")
                if d_beat == 0:
                    assert t_m, f"frame {d_taken} started without its s_meta"
                    meta = m_cur
                    m_cur = None
                    if cont is None:
                        cont_id += 1
                        key = meta["dst_node"] % self.nodes
                        seq = seqs.get(key, 0)
                        seqs[key] = (seq + 1) & 0xFFFF
                        cont = [meta, seq]
                        h2 = hist[-3]  # as driven 2 clocks before this one
                        cont_up[cont_id] = ("healthy", h2)
                    first_meta, seq = cont
                    d_cur.append(
                        stamp(
                            d_cur[1],
                            W,
                            meta is first_meta,
                            meta["last"],
                            first_meta["dst_node"],
                            first_meta["ttl"],
                            seq,
                            meta["len"],
                            first_meta["dgsq"],
                        )
                    )
                    d_cur.append(cont_id)
                    if meta["last"]:
                        cont = None
                    d_taken += 1
                want = d_cur[4][d_beat]
                inflight.append(("d", d_done, d_beat, want, d_cur[5], d_cur[3]))
                d_beat += 1
                if d_beat == len(d_cur[1]):
                    d_cur = None
                    d_done += 1
            if t_c:
                b = c_cur[1][c_beat]
                in_bytes += bin(b[1]).count("1")
                inflight.append(("c", c_taken, c_beat, b, ("healthy", hist[-3]), c_cur[2]))
                c_beat += 1
                if c_beat == len(c_cur[1]):
                    c_cur = None
                    c_taken += 1
            # -- outputs -----------------------------------------------------------------------
            if out_u is not None and check:
                assert inflight, f"an output beat on uplink {out_u} out of nothing"
                kind, idx, beat, want, where, label = inflight.popleft()
                what = f"{'frame' if kind == 'd' else 'control frame'} {idx} ({label}) beat {beat}"
                got_d, got_k, got_u, got_l = o
                assert (got_k, got_u, got_l) == tuple(want[1:4]), (
                    f"{what} on uplink {out_u}: keep/user/last {(got_k, got_u, got_l)} != {tuple(want[1:4])}"
                )
                assert masked(got_d, got_k, W) == masked(want[0], got_k, W), (
                    f"{what} on uplink {out_u}: data {masked(got_d, got_k, W).hex()} != "
                    f"{masked(want[0], got_k, W).hex()}"
                )
                if beat == 0:
                    if kind == "d":
                        cid = where
                        old = cont_up[cid]
                        if isinstance(old, tuple):
                            assert old[1] >> out_u & 1, (
                                f"container {cid} started on uplink {out_u}, not healthy "
                                f"(healthy {old[1]:#x} 2 clocks before)"
                            )
                            cont_up[cid] = out_u
                        else:
                            assert old == out_u, f"container {cid} split over uplinks {old} and {out_u}"
                    else:
                        assert where[1] >> out_u & 1, (
                            f"control frame {idx} on uplink {out_u}, not healthy ({where[1]:#x})"
                        )
                ub[out_u] += bin(got_k).count("1")
                if got_l:
                    if kind == "d":
                        delivered_d += 1
                    else:
                        delivered_c += 1
            # -- progress ---------------------------------------------------------------------
            waiting = d_cur is not None or c_cur is not None or bool(inflight)
            if healthy == 0 and (d_cur is not None or c_cur is not None) and not inflight:
                self.all_down_clocks += 1
            if t_d or t_c or out_u is not None or not waiting or down_all:
                quiet = 0
            else:
                quiet += 1
                if quiet >= STALL:
                    port = "m_axis_*" if inflight else "s_axis" if d_cur is not None else "s_ctrl"
                    raise WaitTimeout(
                        f"no beat on {port} for {STALL} clocks ({n_data_total - d_done} frames, "
                        f"{len(ctrl_q) + (c_cur is not None)} control frames, {len(inflight)} beats to go)"
                    )
        # put the readies up, links healthy, for the end checks
        for i in range(U):
            self.ups[i]["ready"].value = 1
        d.healthy.value = (1 << U) - 1
        d.s_axis_tvalid.value = d.s_meta_valid.value = d.s_ctrl_tvalid.value = 0
        return {
            "containers": cont_id + 1,
            "data": delivered_d,
            "ctrl": delivered_c,
            "ctrl_sent": c_taken,
            "uplink_bytes": ub,
            "in_bytes": in_bytes,
            "clocks": clocks,
        }

    def stat(self, name):
        return int(getattr(self.dut, name).value)

    async def settle(self, n=8):
        for _ in range(n):
            await RisingEdge(self.dut.clk)

    async def reset_cut(self, epoch):
        """Hold ``rst`` (from the middle of a burst), then check the block comes back
        clean: no output beat while the seq table clears, counters 0."""
        d, U = self.dut, self.U
        d.rst.value = 1
        for _ in range(self.rng.randint(1, 3)):
            await RisingEdge(d.clk)
        d.rst.value = 0
        d.s_axis_tvalid.value = d.s_meta_valid.value = d.s_ctrl_tvalid.value = 0
        stale = 0
        for _ in range(2 * self.nodes):
            await RisingEdge(d.clk)
            stale += sum(int(u["valid"].value) for u in self.ups)
        assert not stale, f"after reset {epoch}: {stale} uplink beats (stale output)"
        names = [f"stat_containers_{i}" for i in range(U)] + [f"stat_bytes_{i}" for i in range(U)]
        names += ["stat_ctrl", "stat_stall_no_uplink"]
        left = {n: self.stat(n) for n in names if self.stat(n)}
        assert not left, f"after reset {epoch}: counters not cleared: {left}"
        assert self.stat("busy") == 0, "busy after reset"


@cocotb.test()
async def test_sprayer_soak(dut):
    n = soak_inputs()
    rng = random.Random(2020)
    tb = SoakTB(dut, rng)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for s in ("s_axis_tvalid", "s_meta_valid", "s_ctrl_tvalid"):
        getattr(dut, s).value = 0
    dut.healthy.value = (1 << tb.U) - 1
    dut.avoid.value = 0
    U = tb.U
    totals = ReasonTally()
    per_epoch = [n // EPOCHS + (1 if k < n % EPOCHS else 0) for k in range(EPOCHS)]
    dut.rst.value = 1
    await tb.settle(4)
    dut.rst.value = 0
    for epoch, n_ep in enumerate(per_epoch):
        if not n_ep:
            continue
        tb.all_down_clocks = 0
        items, n_cont, n_ctrl = tb.make_traffic(n_ep)
        led = await tb.run(items)
        await tb.settle(8)
        what = f"epoch {epoch}"
        # conservation, exact
        assert led["data"] == n_ep, f"{what}: {led['data']} frames delivered of {n_ep}"
        assert led["ctrl"] == n_ctrl == led["ctrl_sent"], (
            f"{what}: {led['ctrl']} control frames delivered of {n_ctrl}"
        )
        conts = sum(tb.stat(f"stat_containers_{i}") for i in range(U))
        assert conts == led["containers"] == n_cont, (
            f"{what}: stat_containers_* {conts}, containers sent {n_cont}"
        )
        got_b = [tb.stat(f"stat_bytes_{i}") for i in range(U)]
        assert got_b == led["uplink_bytes"], f"{what}: stat_bytes_* {got_b} != seen {led['uplink_bytes']}"
        assert sum(got_b) == led["in_bytes"], f"{what}: {sum(got_b)} bytes counted of {led['in_bytes']} sent"
        assert tb.stat("stat_ctrl") == n_ctrl, f"{what}: stat_ctrl {tb.stat('stat_ctrl')} != {n_ctrl}"
        stall = tb.stat("stat_stall_no_uplink")
        # every clock the bench held all links down with a frame waiting counts, but the
        # first 2 (healthy is seen 2 clocks late) of each all-down period
        assert stall <= led["clocks"], f"{what}: stat_stall_no_uplink {stall} > {led['clocks']} clocks"
        if tb.all_down_clocks > 400:
            assert stall > 0, f"{what}: stat_stall_no_uplink 0 after {tb.all_down_clocks} clocks all down"
        # full return
        assert tb.stat("busy") == 0, f"{what}: busy {tb.stat('busy'):#x} at rest"
        for i in range(U):
            assert not int(tb.ups[i]["valid"].value), f"{what}: uplink {i} valid at rest"
        dut._log.info(
            "sprayer soak %s: %d frames in %d containers, %d control frames, %d clocks, "
            "%d clocks all links down (stall counter %d), bytes per uplink %s",
            what,
            n_ep,
            n_cont,
            n_ctrl,
            led["clocks"],
            tb.all_down_clocks,
            stall,
            got_b,
        )
        # a burst cut by a reset at a random clock, then back clean (seqs restart at 0:
        # the next epoch's stamp check)
        burst, _, _ = tb.make_traffic(40)
        await tb.run(burst, max_clocks=rng.randint(5, 400), check=False)
        await tb.reset_cut(epoch)
    for k, v in tb.tally.counts.items():
        totals.add(k, v)
    dut._log.info("sprayer soak: %d frames; reasons sent: %s", n, totals.table())
