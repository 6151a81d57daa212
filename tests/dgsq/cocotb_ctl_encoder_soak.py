"""Soak of the control-frame encoder (opengse.sim.soak; issue 18): N headers with
hostile field values (every ``type`` 0..15 including the reserved ones, ``ttl`` 0,
all-zero and all-one fields, random ones), random idle clocks on ``s_ctl``, random
back-pressure on ``m_axis`` (with occasional long stalls), MAC addresses changed at
rest, and random resets in mid-frame between epochs.

The reference is scapy (``sim/gse_scapy.GSE``, ``ver`` 1, ``next_type`` 0): each frame
is DA, SA, the GSE EtherType, the 18 header bytes, zeros to 60 bytes; one frame per
header in order, ``tkeep`` all ones but on the last beat (the 60 bytes' tail), ``tuser``
0. Each epoch asserts progress (``STALL`` clocks without a beat while work is queued
fails, naming the port), conservation (frames delivered == headers sent ==
``stat_frames``, exactly), full return (``m_axis_tvalid`` low, ``s_ctl_ready`` high at
rest); after each reset: no beat out, ``stat_frames`` 0, and the next epoch conserves
again."""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.cocotb_util import WaitTimeout
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE
from opengse.sim.runner import test_params
from opengse.sim.soak import ReasonTally, soak_inputs

FIELDS = {  # name: width
    "type": 4,
    "flags": 8,
    "tc": 3,
    "tenant": 12,
    "src_node": 16,
    "dst_node": 16,
    "port": 8,
    "ttl": 8,
    "seq": 16,
    "len": 16,
    "dgsq": 16,
}
EPOCHS = 4
STALL = 20_000


def header(rng, tally):
    kind = rng.choice(("request", "grant", "reserved_type", "data_probe", "ttl0", "zeros", "ones", "random"))
    tally.add(kind)
    f = {k: rng.randrange(1 << w) for k, w in FIELDS.items()}
    if kind == "request":
        f["type"] = 1
    elif kind == "grant":
        f["type"] = 2
    elif kind == "reserved_type":
        f["type"] = rng.randrange(4, 16)
    elif kind == "data_probe":
        f["type"] = rng.choice((0, 3))
    elif kind == "ttl0":
        f["ttl"] = 0
    elif kind == "zeros":
        f = {k: 0 for k in FIELDS}
    elif kind == "ones":
        f = {k: (1 << w) - 1 for k, w in FIELDS.items()}
    return f


def reference(f, da, sa):
    """The 60-byte frame, from scapy's GSE layer."""
    g = GSE(ver=1, next_type=0, **f)
    raw = da.to_bytes(6, "big") + sa.to_bytes(6, "big") + GSE_ETHERTYPE.to_bytes(2, "big") + bytes(g)
    return raw + bytes(60 - len(raw))


class EncoderTB:
    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.W = test_params()["data_width"] // 8
        self.h = {k: getattr(dut, f"s_ctl_{k}") for k in FIELDS}
        self.tally = ReasonTally()
        self.da = self.sa = 0

    def set_macs(self):
        r = self.rng
        self.da = r.choice((r.randrange(1 << 48), (1 << 48) - 1, 0x0180C2000001))
        self.sa = r.choice((r.randrange(1 << 48), 0))
        self.dut.mac_da.value, self.dut.mac_sa.value = self.da, self.sa

    async def run(self, n, max_clocks=None):
        """Send ``n`` headers and take every frame (``max_clocks`` None), or drive for
        ``max_clocks`` clocks only (a burst cut by a reset: nothing checked). Returns the
        frames delivered."""
        d, r, W = self.dut, self.rng, self.W
        todo = deque(header(r, self.tally) for _ in range(n))
        want = deque()
        cur = None
        got = bytearray()
        delivered = 0
        quiet = clocks = 0
        stall = 0
        shown = None
        last_v = last_r = None
        nbeats = -(-60 // W)
        tail_keep = (1 << (60 - (nbeats - 1) * W)) - 1
        while True:
            if max_clocks is None:
                if not todo and cur is None and not want:
                    break
            elif clocks >= max_clocks:
                break
            clocks += 1
            if cur is None and todo and r.random() >= 0.2:
                cur = todo.popleft()
            if cur is not None and cur is not shown:
                shown = cur
                for k, v in cur.items():
                    self.h[k].value = v
            if (cur is not None) != last_v:
                last_v = cur is not None
                d.s_ctl_valid.value = int(last_v)
            if stall:
                stall -= 1
                rdy = 0
            elif r.random() < 0.001:
                stall, rdy = r.randint(20, 600), 0
            else:
                rdy = int(r.random() < 0.7)
            if rdy != last_r:
                d.m_axis_tready.value = last_r = rdy
            await ReadOnly()
            took = cur is not None and int(d.s_ctl_ready.value)
            beat = None
            if rdy and int(d.m_axis_tvalid.value):
                beat = (
                    int(d.m_axis_tdata.value),
                    int(d.m_axis_tkeep.value),
                    int(d.m_axis_tlast.value),
                    int(d.m_axis_tuser.value),
                )
            await RisingEdge(d.clk)
            if took:
                want.append((reference(cur, self.da, self.sa), cur))
                cur = None
            if beat is not None and max_clocks is None:
                data, keep, last, user = beat
                k = len(got) // W
                assert want, f"a beat out of nothing after {delivered} frames"
                assert user == 0, f"frame {delivered}: tuser {user}"
                assert last == (k == nbeats - 1), f"frame {delivered} beat {k}: tlast {last}"
                exp_keep = tail_keep if k == nbeats - 1 else (1 << W) - 1
                assert keep == exp_keep, f"frame {delivered} beat {k}: tkeep {keep:#x} != {exp_keep:#x}"
                got += data.to_bytes(W, "little")
                if last:
                    ref, f = want.popleft()
                    assert bytes(got[:60]) == ref, (
                        f"frame {delivered} ({f}): {bytes(got[:60]).hex()} != {ref.hex()}"
                    )
                    got = bytearray()
                    delivered += 1
            waiting = cur is not None or bool(want)
            if took or beat is not None or not waiting or stall:
                quiet = 0
            else:
                quiet += 1
                if quiet >= STALL:
                    port = "m_axis" if want else "s_ctl"
                    raise WaitTimeout(
                        f"no beat on {port} for {STALL} clocks "
                        f"({len(todo)} headers, {len(want)} frames to go)"
                    )
        d.s_ctl_valid.value = 0
        d.m_axis_tready.value = 1
        return delivered

    async def clocks(self, n):
        for _ in range(n):
            await RisingEdge(self.dut.clk)


@cocotb.test()
async def test_ctl_encoder_soak(dut):
    n = soak_inputs()
    rng = random.Random(2021)
    tb = EncoderTB(dut, rng)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.s_ctl_valid.value = 0
    dut.m_axis_tready.value = 1
    tb.set_macs()
    dut.rst.value = 1
    await tb.clocks(4)
    dut.rst.value = 0
    per_epoch = [n // EPOCHS + (1 if k < n % EPOCHS else 0) for k in range(EPOCHS)]
    for epoch, n_ep in enumerate(per_epoch):
        if not n_ep:
            continue
        what = f"epoch {epoch}"
        done = 0
        for part in range(3):  # MACs changed at rest, twice per epoch
            k = n_ep // 3 + (1 if part < n_ep % 3 else 0)
            done += await tb.run(k)
            await tb.clocks(2)
            tb.set_macs()
        await tb.clocks(4)
        frames = int(dut.stat_frames.value)
        assert done == n_ep == frames, (
            f"{what}: {done} frames delivered, {n_ep} headers sent, stat_frames {frames}"
        )
        assert not int(dut.m_axis_tvalid.value), f"{what}: m_axis valid at rest"
        assert int(dut.s_ctl_ready.value), f"{what}: s_ctl not ready at rest"
        dut._log.info("ctl encoder soak %s: %d headers, %d frames, stat_frames %d", what, n_ep, done, frames)
        # a burst cut by a reset at a random clock (mid-frame as a rule)
        await tb.run(20, max_clocks=rng.randint(3, 60))
        dut.rst.value = 1
        await tb.clocks(rng.randint(1, 3))
        dut.rst.value = 0
        dut.s_ctl_valid.value = 0
        out = 0
        for _ in range(16):
            await RisingEdge(dut.clk)
            out += int(dut.m_axis_tvalid.value)
        assert not out, f"after reset {epoch}: {out} beats out with no header in"
        assert int(dut.stat_frames.value) == 0, (
            f"after reset {epoch}: stat_frames {int(dut.stat_frames.value)}"
        )
    dut._log.info("ctl encoder soak: %d headers; kinds sent: %s", n, tb.tally.table())
