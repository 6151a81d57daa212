"""gsectl end to end against a real leaf: the installed ``gsectl`` (a subprocess) configures
and reads a :class:`~opengse.rtl.tops.leaf.managed_leaf.ManagedLeaf` (managed_leaf_top.py:
a 1 x 2 ECMP GSELeaf with its management port) on Verilator, through management frames
on the leaf's host port 0 (gsectl's ``--sim`` socket, pumped into ``s_axis_host_0`` and
back from ``m_axis_host_0``) and through its UART (a pseudo-terminal, pumped bit by bit).

The bench is the leaf's surroundings: each uplink's PROBEs return on the same uplink
(what a spine does), so the link monitor holds the uplinks whose link is up healthy;
every other frame an uplink sends is recorded. In GSE mode (``lb`` 0) the bench is also
the far leaf's arbiter: it answers each REQUEST with a backlog with a GRANT of one
container (docs/dgsq.md), and uplink 1's link is down, so the one healthy uplink is
where the containers must go; in ECMP mode (``lb`` 1) both are up and the ECMP model
names the uplink. Then:

* gsectl reads ``sys.ident``, ``links`` and the real leaf's counters: a host frame to a
  MAC the table does not hold (sent before) is counted by the leaf as an unknown
  destination (``h0_in.cls_drop_unknown``), a 10-byte runt as a runt
  (``cls_store_drop_runt``), a management frame marked bad as malformed (its write never
  lands), and the PROBE counters of the link monitor move;
* gsectl writes ``leaf.ecmp_seed`` and, with ``table set``, a destination entry through
  frames and another through the UART; after each, a host frame to that MAC leaves the
  leaf on the expected uplink (ECMP: the one the ECMP model, sim/ecmp_model.py, from the
  spec, names for that seed), tagged (the scapy GSE layer of sim/gse_scapy.py): DATA, ``src_node`` 0,
  ``dst_node`` as configured, the original frame inside byte for byte;
* the management frames never reached the leaf's data path (its host store counts only
  the bench's data frames), and nothing else left on an uplink or to the host;
* bad input to gsectl (unknown register, bad MAC, node out of range, a read-only
  register) gives one line on stderr and exit status 2; a wrong key gets no answer, is
  counted (``mgmt.mgmt_bad_key``) and does not reach the leaf's data path either.

Every wait is bounded (opengse.sim.cocotb_util; gsectl calls by wall time).
"""

import json
import tempfile
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from cocotb_gsectl import Pumps, counters
from managed_leaf_top import DIVISOR, managed_leaf
from mgmt_top import TEST_KEY
from mgmt_uart import UartPins
from opengse.sim.cocotb_util import reset_dut, wait_until
from opengse.sim.ecmp_model import ecmp_uplink
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE, control_frame, tag, untag
from opengse.sim.mgmt_scapy import GSEMgmt, MgmtRecord
from opengse.sim.runner import test_params

U = 2
GSE_MODE = test_params()["lb"] == 0
#: GSE mode: uplink 1's link is down, so the sprayer has one uplink and the expected
#: one is known; ECMP: both up, the ECMP model names the uplink
LINK_UP = 0b01 if GSE_MODE else 0b11
GRANT_CREDITS = 2048 // 64  # one container of managed_leaf_top's leaf, in credit units
HOST_MAC = "02:00:00:00:00:00"
SEED = 0x5EED_1234


class Bench:
    """What cocotb_gsectl.Pumps needs (``dut``, ``src``, ``sink``, ``uart``), and the
    uplinks: PROBEs looped back, every other frame kept in ``self.up[u]``."""

    def __init__(self, dut):
        self.dut = dut
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_host_0"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_host_0"), dut.clk, dut.rst)
        self.uart = UartPins(dut.clk, dut.uart_rx, dut.uart_tx, DIVISOR)
        self.up = [[] for _ in range(U)]
        self.data_seen = [0] * U  # data frames each uplink sent, checked so far
        self.probes = [0] * U
        self.grants_sent, self.grant_seq = 0, {}
        self._fab_sinks, self._fab_srcs = [], []
        for u in range(U):
            self._fab_sinks.append(
                AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_fab_{u}"), dut.clk, dut.rst)
            )
            self._fab_srcs.append(
                AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_fab_{u}"), dut.clk, dut.rst)
            )
            getattr(dut, f"fab_pause_in_{u}").value = 0
        dut.host_pause_in_0.value = 0
        dut.link_up.value = LINK_UP

    async def start(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        await reset_dut(self.dut)
        for u in range(U):
            cocotb.start_soon(self._uplink(u))

    async def _uplink(self, u):
        sink, src = self._fab_sinks[u], self._fab_srcs[u]
        while True:
            out = await sink.recv()
            raw = bytes(out.tdata)
            pkt = Ether(raw)
            kind = pkt[GSE].type if pkt.type == GSE_ETHERTYPE and GSE in pkt else None
            if kind == 3:
                self.probes[u] += 1
                await src.send(AxiStreamFrame(raw))  # the spine returns it on the same link
            elif kind == 1 and GSE_MODE:
                await self._grant(src, pkt[GSE])
            else:
                self.up[u].append(raw)

    async def _grant(self, src, req):
        """GSE mode: the far leaf's arbiter, granting one container per REQUEST with a
        backlog (docs/dgsq.md: ``seq`` one past the last grant, ``dgsq`` echoed)."""
        if req.len == 0:
            return
        seq = self.grant_seq[req.dgsq] = max(self.grant_seq.get(req.dgsq, 0), req.seq) + 1
        fields = dict(src_node=req.dst_node, dst_node=req.src_node, port=req.port, tc=req.tc)
        grant = control_frame("GRANT", **fields, tenant=req.tenant, dgsq=req.dgsq, len=GRANT_CREDITS, seq=seq)
        await src.send(AxiStreamFrame(grant))
        self.grants_sent += 1

    async def data_frame(self, dst_mac, sport):
        pkt = Ether(dst=dst_mac, src=HOST_MAC) / IP(src="10.0.0.1", dst="10.0.0.9", proto=17)
        pkt = pkt / UDP(sport=sport, dport=4791) / Raw(bytes(range(64)))
        await self.src.send(AxiStreamFrame(bytes(pkt), tuser=0))
        return bytes(pkt)

    async def expect_on_uplink(self, frame, dst_node, uplink):
        """The one frame the uplinks send next: on ``uplink``, ``frame`` tagged for ``dst_node``."""
        await wait_until(self.dut.clk, lambda: any(self.up), "a data frame on an uplink", 20_000)
        await ClockCycles(self.dut.clk, 200)  # a second frame, on either uplink, would show now
        got = [(u, f) for u in range(U) for f in self.up[u]]
        assert len(got) == 1, f"expected one frame on the uplinks, got {[(u, len(f)) for u, f in got]}"
        u, raw = got[0]
        self.up[u].clear()
        self.data_seen[u] += 1
        gse = Ether(raw)[GSE]
        assert u == uplink, f"the frame left on uplink {u}, expected {uplink}"
        assert (gse.type, gse.src_node, gse.dst_node) == (0, 0, dst_node), gse.show2(dump=True)
        assert untag(raw) == frame, "the tagged frame does not carry the host's frame"


@cocotb.test()
async def gsectl_manages_a_leaf(dut):
    b = Bench(dut)
    leaf = managed_leaf(**test_params())  # built for its register map only
    leaf._MustUse__silence = True
    await b.start()
    await wait_until(dut.clk, lambda: int(dut.healthy.value) == LINK_UP, "the linked uplinks healthy", 20_000)
    with tempfile.TemporaryDirectory(prefix="gsectl-leaf-") as tmp:
        p = Pumps(b, tmp, tuser=0)
        p.map_path = str(Path(tmp) / "map.json")
        Path(p.map_path).write_text(json.dumps(leaf.regmap.as_dict()))

        # a frame to a MAC the table does not hold: the leaf drops and counts it; a
        # runt (too short for an EtherType: to the leaf, whose store drops it); a
        # management frame marked bad (to the management port: malformed, no answer)
        await b.data_frame("02:00:00:00:00:33", 50000)
        await b.src.send(AxiStreamFrame(bytes(range(10)), tuser=0))
        scratch = leaf.regmap.address(leaf.regmap["sys"], leaf.regmap["sys"]["scratch"])
        bad = Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_MAC) / GSEMgmt(
            key=TEST_KEY, seq=1, records=[MgmtRecord(op=2, addr=scratch, data=0xBAD)]
        )
        await b.src.send(AxiStreamFrame(bytes(bad), tuser=1))
        await ClockCycles(dut.clk, 600)
        assert not any(b.up) and b.sink.empty(), "a frame for nobody left the leaf"

        rc, out, err = await p.gsectl("read", "sys.ident")
        assert rc == 0 and out.strip() == "sys.ident = 1196639537 (0x47534531)", (rc, out, err)
        rc, out, err = await p.gsectl("links")
        lines = out.splitlines()
        assert rc == 0 and len(lines) == U, out
        for u in range(U):
            state = "up, healthy" if LINK_UP >> u & 1 else "DOWN, not healthy"
            assert lines[u].startswith(f"uplink {u}: {state}"), out
        rc, out, err = await p.gsectl("counters", "h0_in")
        assert rc == 0, err
        c = counters(out)
        assert c["h0_in.cls_drop_unknown"] == 1 and c["h0_in.cls_store_frames"] == 1, c
        assert c["h0_in.cls_store_drop_runt"] == 1, c
        rc, out, err = await p.gsectl("counters", "mgmt")
        assert rc == 0 and counters(out)["mgmt.mgmt_malformed"] == 1, (rc, out, err)
        rc, out, err = await p.gsectl("read", "sys.scratch")
        assert rc == 0 and out.split()[2] == "0", (rc, out, err)  # the bad frame's write never landed
        rc, out, err = await p.gsectl("counters", "lm")
        assert rc == 0, err
        c = counters(out)
        for u in range(U):
            # read one after the other while PROBEs go on: each side has counted many
            if LINK_UP >> u & 1:
                assert c[f"lm.probes_sent[{u}]"] >= 10 and c[f"lm.probes_rcvd[{u}]"] >= 10, c

        # through frames: the ECMP seed, then a table entry; a frame to it leaves tagged
        rc, out, err = await p.gsectl("write", "leaf.ecmp_seed", hex(SEED))
        assert rc == 0, err
        rc, out, err = await p.gsectl("table", "set", "02:00:00:00:00:07", "3", "0")
        assert rc == 0 and "-> node 3 port 0" in out, (rc, out, err)
        healthy = int(dut.healthy.value)
        for sport in (50001, 50002, 50003):
            frame = await b.data_frame("02:00:00:00:00:07", sport)
            await b.expect_on_uplink(frame, 3, expected_uplink(frame, 3, healthy))

        # through the UART: another entry; a frame to it leaves tagged for its node
        rc, out, err = await p.gsectl("table", "set", "02:00:00:00:00:08", "2", "0", transport="uart")
        assert rc == 0 and "entry 1:" in out and "-> node 2 port 0" in out, (rc, out, err)
        frame = await b.data_frame("02:00:00:00:00:08", 50004)
        await b.expect_on_uplink(frame, 2, expected_uplink(frame, 2, healthy))
        rc, out, err = await p.gsectl("read", "leaf.ecmp_seed", transport="uart")
        assert rc == 0 and out.strip() == f"leaf.ecmp_seed = {SEED} ({SEED:#x})", (rc, out, err)

        # the leaf's counters, through the UART: the host store saw the bench's five data
        # frames and none of the management frames (the split steered those away); the
        # ECMP selector counted per uplink what the bench saw there
        rc, out, err = await p.gsectl("counters", "h0_in", transport="uart")
        assert rc == 0, err
        c = counters(out)
        assert c["h0_in.cls_store_frames"] == 5 and c["h0_in.cls_frames"] == 4, c
        if GSE_MODE:  # every GRANT the bench sent arrived, in sequence
            assert c["h0_in.mgr_grants"] == b.grants_sent and c["h0_in.mgr_grant_gap"] == 0, c
            # one frame per container here (each sent after the last one left)
            assert [c[f"h0_in.sp_containers[{u}]"] for u in range(U)] == b.data_seen, (c, b.data_seen)
        else:
            assert [c[f"h0_in.sel_frames[{u}]"] for u in range(U)] == b.data_seen, (c, b.data_seen)
        # every counter, through frames: the management port's own
        rc, out, err = await p.gsectl("counters")
        assert rc == 0, err
        c = counters(out)
        assert c["mgmt.uart_requests"] > 10 and c["h0_in.cls_drop_unknown"] == 1, c
        assert c["mgmt.mgmt_malformed"] == 1 and c["mgmt.mgmt_bad_key"] == c["mgmt.mgmt_bad_port"] == 0, c
        # every frame gsectl sent was executed (read through the UART: no frame meanwhile)
        rc, out, err = await p.gsectl("read", "mgmt.mgmt_requests", transport="uart")
        assert rc == 0 and out.split()[2] == str(p.frames_in), (rc, out, p.frames_in)

        # bad input: one line on stderr, exit 2
        for args, words in [
            (("read", "leaf.nope"), "unknown register leaf.nope"),
            (("table", "set", "02:00:00:00:00", "1", "0"), "not a MAC address"),
            (("table", "set", "02:00:00:00:00:09", "70000", "0"), "NODE 70000 out of range"),
            (("write", "leaf.healthy", "1"), "read-only"),
        ]:
            rc, out, err = await p.gsectl(*args)
            assert rc == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, (
                args,
                rc,
                err,
            )
        # a wrong key: no answer, counted, and the frame is not the leaf's either
        rc, out, err = await p.gsectl("--key", "0x1", "--retries", "0", "read", "sys.ident", timeout=0.3)
        assert rc == 2 and "no answer to a management frame" in err and err.count("\n") == 1, (rc, err)
        rc, out, err = await p.gsectl("counters", "mgmt", transport="uart")
        assert rc == 0 and counters(out)["mgmt.mgmt_bad_key"] == 1, (rc, out, err)
        rc, out, err = await p.gsectl("read", "h0_in.cls_store_frames", transport="uart")
        assert rc == 0 and out.split()[2] == "5", (rc, out, err)
        assert b.sink.empty() and not any(b.up), "frames left the leaf that nobody asked for"
        p.close()


def expected_uplink(frame, dst_node, healthy):
    """GSE mode: the one healthy uplink. ECMP: the ECMP model's, from ``frame`` as the
    leaf tags it (the flow key is the IPv4 5-tuple inside the tag)."""
    if GSE_MODE:
        return healthy.bit_length() - 1
    return ecmp_uplink(tag(frame, dst_node=dst_node), SEED, healthy, U)
