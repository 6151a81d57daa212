"""The management port on Verilator: management frames (scapy, the reference format of
sim/mgmt_scapy.py) and UART bytes (a bit-level UART) against a register bank, checked
with a plain-Python model of the bank (sim/mgmt_model.py); random back-pressure and idle
cycles on both frame streams; every bad frame and request counted exactly, none
reaching the bus."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.l2 import Ether

from mgmt_top import ALLOWED_PORT, DIVISOR, MAX_RECORDS, TEST_KEY, UART_IDLE_LIMIT, top_map
from mgmt_uart import UartPins
from opengse.sim.cocotb_util import random_pause, recv_within, reset_dut, wait_until
from opengse.sim.mgmt_model import DECERR, OKAY, SLVERR, BankModel
from opengse.sim.mgmt_scapy import GSEMgmt, MgmtRecord, parse_uart_response, uart_request

HOST_MAC, DUT_MAC = "02:00:00:00:00:aa", "02:00:00:00:00:01"
READ, WRITE = 1, 2
ADDR_WIDTH = 12


class Bench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        self.map = top_map()
        self.model = BankModel(self.map, ADDR_WIDTH)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.src.set_pause_generator(random_pause(self.rng, 0.3))
        self.sink.set_pause_generator(random_pause(self.rng, 0.3))
        self.uart = UartPins(dut.clk, dut.uart_rx, dut.uart_tx, DIVISOR)
        self.seq = 0
        self.expected = {"mgmt_requests": 0, "mgmt_bad_port": 0, "mgmt_malformed": 0, "mgmt_bad_key": 0}
        self.expected.update({"mgmt_bus_errors": 0, "uart_requests": 0, "uart_bad_checksum": 0})
        self.expected.update({"uart_malformed": 0, "uart_framing": 0, "uart_overrun": 0})
        dut.link_up.value = 0
        dut.lookup_key.value = 0

    async def start(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        await reset_dut(self.dut)

    def addr(self, name, index=0):
        blk, reg = name.split(".")
        return self.map.address(self.map[blk], self.map[blk][reg], index)

    def frame(self, records, key=TEST_KEY, **fields):
        self.seq = (self.seq + 1) & 0xFFFF
        recs = [MgmtRecord(op=op, addr=a, data=d) for op, a, d in records]
        dst = self.rng.choice([DUT_MAC, "ff:ff:ff:ff:ff:ff"])  # any address is answered
        return Ether(dst=dst, src=HOST_MAC) / GSEMgmt(key=key, seq=self.seq, records=recs, **fields)

    async def send(self, pkt, port=ALLOWED_PORT, err=0, raw=None):
        data = bytes(pkt) if raw is None else raw
        await self.src.send(AxiStreamFrame(data, tuser=(port << 1) | err))

    async def exchange(self, records):
        """Send a good request; check the response against the model; return its data."""
        pkt = self.frame(records)
        await self.send(pkt)
        out = await recv_within(self.sink, f"response to seq {self.seq}", 20_000)
        resp = Ether(bytes(out.tdata))
        assert len(out.tdata) >= 60, f"response of {len(out.tdata)} bytes, not padded to 60"
        assert resp.type == 0x88B6 and resp.dst == HOST_MAC and resp.src == DUT_MAC, resp.summary()
        m = resp[GSEMgmt]
        assert (m.magic, m.version, m.flags, m.key) == (0x474D, 1, 1, 0), m.show(dump=True)
        assert m.seq == self.seq and m.count == len(records), (m.seq, m.count)
        data = []
        for (op, a, d), r in zip(records, m.records):
            assert (r.op, r.addr) == (op, a), (r.op, r.addr, op, a)
            if op == READ:
                status, want = self.model.read(a)
                assert r.status == status, f"read {a:#x}: status {r.status}, model {status}"
                if want is not None:
                    assert r.data == want, f"read {a:#x}: {r.data:#x}, model {want:#x}"
            else:
                status = self.model.write(a, d)
                assert r.status == status, f"write {a:#x}: status {r.status}, model {status}"
                assert r.data == d
            self.expected["mgmt_bus_errors"] += status != OKAY
            data.append(r.data)
        self.expected["mgmt_requests"] += 1
        return data

    async def uart_exchange(self, op, a, d=0):
        await self.uart.send(uart_request(op, a, d))
        await wait_until(
            self.dut.clk, lambda: len(self.uart.received) >= 7, "a UART response", 20 * 10 * DIVISOR
        )
        status, data = parse_uart_response(self.uart.take(7))
        if op == READ:
            want_status, want = self.model.read(a)
            assert status == want_status, f"uart read {a:#x}: status {status}, model {want_status}"
            if want is not None:
                assert data == want, f"uart read {a:#x}: {data:#x}, model {want:#x}"
        else:
            want_status = self.model.write(a, d)
            assert status == want_status and data == 0, (status, data, want_status)
        self.expected["uart_requests"] += 1
        return status, data

    async def read_counters(self):
        """Every counter of the ``mgmt`` block, read through management frames."""
        names = list(self.expected)
        got = {}
        for i in range(0, len(names), MAX_RECORDS):
            chunk = names[i : i + MAX_RECORDS]
            vals = await self.exchange([(READ, self.addr(f"mgmt.{n}"), 0) for n in chunk])
            got.update(zip(chunk, vals))
        return got

    async def assert_counters(self):
        """Every counter equals the count of what the bench sent. A frame is counted
        when it passes its checks, before its reads run: the first counter frame reads
        ``mgmt_requests`` including itself, and none of the later ones."""
        before = self.expected["mgmt_requests"]
        got = await self.read_counters()
        want = dict(self.expected, mgmt_requests=before + 1)
        for n, v in got.items():
            assert v == want[n], f"counter mgmt.{n}: {v}, expected {want[n]}"

    async def quiet(self, clocks=2000):
        """No response may come out for ``clocks`` clocks (after a dropped frame)."""
        for _ in range(clocks):
            await ClockCycles(self.dut.clk, 1)
            assert self.sink.empty(), "a response to a frame that should have been dropped"


@cocotb.test()
async def frames(dut):
    b = Bench(dut, 1)
    await b.start()
    scratch, ident, map_id = b.addr("sys.scratch"), b.addr("sys.ident"), b.addr("sys.map_id")
    data = await b.exchange([(READ, ident, 0), (READ, map_id, 0)])
    assert data == [0x47534531, b.map.fingerprint()], [hex(x) for x in data]
    await b.exchange([(WRITE, scratch, 0xDEADBEEF), (READ, scratch, 0)])
    # errors per record, the others still run: RO write, hole, beyond the bank's window
    await b.exchange(
        [
            (WRITE, ident, 1),
            (READ, 0x0C, 0),
            (READ, 1 << ADDR_WIDTH, 0),
            (WRITE, 0x7FF0, 5),
            (WRITE, scratch, 0x1234),
            (READ, scratch, 0),
        ]
    )
    # random traffic: up to MAX_RECORDS records of random reads and RW writes
    rw = [a for a, (blk, reg, i, w) in b.map.words().items() if reg.access.value == "rw"]
    every = list(b.map.words())
    for _ in range(30):
        recs = []
        for _ in range(b.rng.randint(1, MAX_RECORDS)):
            if b.rng.random() < 0.5:
                recs.append((WRITE, b.rng.choice(rw + every), b.rng.getrandbits(32)))
            else:
                recs.append((READ, b.rng.choice(every + [0x0C, 0x200]), 0))
        await b.exchange(recs)
    await b.assert_counters()

    # bad frames: each dropped with no response and no bus access, counted once
    poison = [(WRITE, scratch, 0xBAD0BAD0)]
    bad = [
        ("mgmt_bad_key", b.frame(poison, key=TEST_KEY ^ 1), {}),
        ("mgmt_bad_key", b.frame(poison, key=0), {}),
        ("mgmt_bad_port", b.frame(poison), {"port": ALLOWED_PORT ^ 1}),
        ("mgmt_bad_port", b.frame(poison, key=0), {"port": 0}),
        ("mgmt_malformed", b.frame(poison), {"err": 1}),
        ("mgmt_malformed", b.frame(poison, magic=0x474E), {}),
        ("mgmt_malformed", b.frame(poison, version=2), {}),
        ("mgmt_malformed", b.frame(poison, flags=1), {}),
        ("mgmt_malformed", b.frame(poison, count=0), {}),
        ("mgmt_malformed", b.frame(poison * (MAX_RECORDS + 1)), {}),
        ("mgmt_malformed", b.frame([(3, scratch, 1)]), {}),
        ("mgmt_malformed", b.frame(poison + [(0, scratch, 1)]), {}),
        ("mgmt_malformed", b.frame(poison, count=2), {}),  # claims 2, carries 1 (padding too short)
    ]
    wrong_type = Ether(dst=DUT_MAC, src=HOST_MAC, type=0x88B5) / bytes(b.frame(poison)[GSEMgmt])
    bad.append(("mgmt_malformed", wrong_type, {}))
    full = bytes(b.frame(poison * 3))
    for cut in (5, 14, 29, 30, 41, 30 + 12 * 3 - 1):
        bad.append(("mgmt_malformed", None, {"raw": full[:cut]}))
    for reason, pkt, kw in bad:
        await b.send(pkt, **kw)
        b.expected[reason] += 1
    await b.quiet()
    data = await b.exchange([(READ, scratch, 0)])
    assert data[0] != 0xBAD0BAD0
    await b.assert_counters()


@cocotb.test()
async def uart(dut):
    b = Bench(dut, 2)
    await b.start()
    ident, scratch = b.addr("sys.ident"), b.addr("sys.scratch")
    _, data = await b.uart_exchange(READ, ident)
    assert data == 0x47534531
    await b.uart_exchange(WRITE, scratch, 0xCAFEF00D)
    await b.uart_exchange(READ, scratch)
    assert (await b.uart_exchange(WRITE, ident, 3))[0] == SLVERR
    assert (await b.uart_exchange(READ, 0x0C))[0] == DECERR
    assert (await b.uart_exchange(READ, 1 << 20))[0] == DECERR
    for _ in range(10):
        if b.rng.random() < 0.5:
            await b.uart_exchange(WRITE, scratch, b.rng.getrandbits(32))
        else:
            await b.uart_exchange(READ, b.rng.choice(list(b.map.words())))

    async def nothing_back(clocks):
        for _ in range(clocks):
            await ClockCycles(dut.clk, 1)
        assert not b.uart.received, f"a response to a dropped request: {bytes(b.uart.received).hex()}"

    # bad checksum, unknown op, a request cut short, a byte with a low stop bit, noise
    await b.uart.send(uart_request(WRITE, scratch, 0xBAD, corrupt=True))
    b.expected["uart_bad_checksum"] += 1
    body = bytes([7]) + scratch.to_bytes(4, "big") + (1).to_bytes(4, "big")
    await b.uart.send(bytes([0xA5]) + body + bytes([(-sum(body)) & 0xFF]))
    b.expected["uart_malformed"] += 1
    await b.uart.send(uart_request(WRITE, scratch, 0xBAD)[:6])
    await nothing_back(UART_IDLE_LIMIT + 200)
    b.expected["uart_malformed"] += 1
    await b.uart.send(b"\x11", bad_stop=True)
    b.expected["uart_framing"] += 1
    await b.uart.send(b"\x00\x42\xff")  # bytes before a sync byte: skipped
    await nothing_back(500)
    assert (await b.uart_exchange(READ, scratch))[1] != 0xBAD
    # frames and UART at once: both answered (the arbiter shares the master)
    task = cocotb.start_soon(b.uart_exchange(READ, ident))
    for _ in range(3):
        await b.exchange([(READ, scratch, 0)] * MAX_RECORDS)
    await task
    await b.assert_counters()
    # the UART sees the same counters
    for n in ("uart_requests", "uart_bad_checksum", "uart_malformed", "uart_framing"):
        want = b.expected[n] + (n == "uart_requests")
        _, v = await b.uart_exchange(READ, b.addr(f"mgmt.{n}"))
        assert v == want, f"mgmt.{n} over UART: {v}, expected {want}"
