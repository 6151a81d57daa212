"""cocotb tests of gse_grant_framing (rtl/dgsq/grant_framing.py).

Reference (plain Python, from the brief's GRANT definition): type GRANT, flags 0,
src_node = this leaf, dst_node = the requester, port = the granting egress port,
ttl = the parameter, len = the credit, seq/dgsq/tc/tenant echoed; the slot stays local.
The header is also encoded with the scapy GSE layer and read back, so every field
fits the wire format.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, SimTimeoutError, with_timeout
from scapy.layers.l2 import Ether

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import GSE, control_frame
from opengse.sim.runner import test_params
from opengse.sim.valid_ready import FieldStreamSink, FieldStreamSource

HDR = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
GRANT_REC = {"slot": None, "src_node": 16, "dgsq": 16, "tc": 3, "tenant": 12, "credit": 16, "seq": 16}
TIMEOUT_US = 500


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


@cocotb.test()
async def test_random_grants(dut):
    p = test_params()
    rng = random.Random(61)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    node, port = rng.randrange(65536), rng.randrange(256)
    dut.node_id.value, dut.port.value = node, port
    src = FieldStreamSource(dut, "s_grant", dut.clk, fields=list(GRANT_REC))
    sink = FieldStreamSink(dut, "m_ctl", dut.clk, fields=HDR)
    src.set_pause_generator(random_pause(rng, 0.3))
    sink.set_pause_generator(random_pause(rng, 0.4))
    await reset_dut(dut)
    want = []
    for _ in range(400):
        g = {f: rng.randrange(1 << (w if w else p["slot_bits"])) for f, w in GRANT_REC.items()}
        src.send(g)
        want.append(
            {
                "type": 2,
                "flags": 0,
                "tc": g["tc"],
                "tenant": g["tenant"],
                "src_node": node,
                "dst_node": g["src_node"],
                "port": port,
                "ttl": p["ttl"],
                "seq": g["seq"],
                "len": g["credit"],
                "dgsq": g["dgsq"],
            }
        )
    for k, w in enumerate(want):
        got = await within(sink.recv(), f"GRANT header {k}")
        assert got == w, f"GRANT {k}: {got} != {w}"
        raw = control_frame("GRANT", **{f: v for f, v in got.items() if f != "type"})
        back = GSE(bytes(Ether(raw).payload)[:18])
        assert {f: int(getattr(back, f)) for f in HDR} == got, f"GRANT {k} does not fit the wire"
    for _ in range(20):
        await RisingEdge(dut.clk)
    assert sink.empty(), "headers beyond the expected ones"
    assert int(dut.stat_grants.value) == len(want)
