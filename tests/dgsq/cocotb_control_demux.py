"""cocotb tests of gse_control_demux (rtl/dgsq/control_demux.py).

Reference (plain Python): a decoded header of type REQUEST becomes a request record
(backlog = len), one of type GRANT a GRANT record (the manager's fields), any other
type is dropped and counted; each output keeps the input order.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, SimTimeoutError, with_timeout

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource

HDR = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
REQ = ("src_node", "dgsq", "tc", "tenant", "backlog", "seq")
GRANT = ("type", "src_node", "port", "seq", "len", "dgsq")
WIDTH = {
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
TIMEOUT_US = 500


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


@cocotb.test()
async def test_random_headers(dut):
    rng = random.Random(51)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    src = FieldStreamSource(dut, "s_ctl", dut.clk, fields=HDR)
    req = FieldStreamSink(dut, "m_req", dut.clk, fields=REQ)
    grant = FieldStreamSink(dut, "m_grant", dut.clk, fields=GRANT)
    src.set_pause_generator(random_pause(rng, 0.3))
    req.set_pause_generator(random_pause(rng, 0.4))
    grant.set_pause_generator(random_pause(rng, 0.4))
    await reset_dut(dut)
    want_req, want_grant, dropped = [], [], 0
    for _ in range(600):
        h = {f: rng.randrange(1 << w) for f, w in WIDTH.items()}
        h["type"] = rng.choice([1, 1, 1, 2, 2, 2, 0, 3, rng.randrange(16)])
        if h["type"] == 1:
            want_req.append({**{f: h[f] for f in REQ if f != "backlog"}, "backlog": h["len"]})
        elif h["type"] == 2:
            want_grant.append({f: h[f] for f in GRANT})
        else:
            dropped += 1
        src.send(h)
    for k, want in enumerate(want_req):
        got = await within(req.recv(), f"REQUEST record {k}")
        assert got == want, f"REQUEST {k}: {got} != {want}"
    for k, want in enumerate(want_grant):
        got = await within(grant.recv(), f"GRANT record {k}")
        assert got == want, f"GRANT {k}: {got} != {want}"
    await within(src.wait(), "s_ctl to take every header")
    for _ in range(20):
        await RisingEdge(dut.clk)
    assert req.empty() and grant.empty(), "records beyond the expected ones"
    assert dropped > 20
    for stat, n in (
        ("stat_requests", len(want_req)),
        ("stat_grants", len(want_grant)),
        ("stat_drop_type", dropped),
    ):
        assert int(getattr(dut, stat).value) == n, f"{stat} {int(getattr(dut, stat).value)} != {n}"
