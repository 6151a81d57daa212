"""The bank's register semantics on a small map with every kind of register (arrays, a
48-bit RW register with a write strobe, a 64-bit RO counter, W1C bits), in Amaranth's
simulator, driven through the Python driver; plus its ports against the description
and lint of the reference map's bank."""

import pytest
from amaranth.lib import wiring
from amaranth.sim import Simulator

from opengse.firmware.regs import AsyncRegisters, RegisterError
from opengse.platforms.export import write_export
from opengse.platforms.lint import lint
from opengse.rtl.regs.bank import RESP_DECERR, RESP_OKAY, RESP_SLVERR, AXI4LiteRegisterBank, port_name
from opengse.rtl.regs.blocks import reference_map
from opengse.rtl.regs.description import Access, Register, RegisterBlock, RegisterMap
from opengse.rtl.regs.system import IDENT, system_block


def small_map():
    return RegisterMap(
        [
            system_block(),
            RegisterBlock(
                "blk",
                [
                    Register("count", 20, Access.RO, doc="an RO counter"),
                    Register("lanes", 12, Access.RO, count=3, doc="an RO array"),
                    Register("mac", 48, Access.RW, reset=0x0200_0000_0001, strobe=True, doc="wide RW"),
                    Register("weight", 8, Access.RW, reset=1, count=4, strobe=True, doc="RW array"),
                    Register("big", 64, Access.RO, doc="a 64-bit counter"),
                    Register("flags", 10, Access.W1C, doc="sticky events"),
                ],
                doc="every kind",
            ),
        ],
        name="t",
        doc="test",
    )


class SimBus:
    """read32/write32 as an AXI4-Lite master in an Amaranth testbench (no pauses: the
    cocotb test has them); keeps the last response."""

    def __init__(self, ctx, dut):
        self.ctx, self.dut, self.resp = ctx, dut, None

    async def write(self, addr, value, strb=0xF):
        ctx, d = self.ctx, self.dut
        ctx.set(d.s_axil_awaddr, addr)
        ctx.set(d.s_axil_wdata, value)
        ctx.set(d.s_axil_wstrb, strb)
        ctx.set(d.s_axil_awvalid, 1)
        ctx.set(d.s_axil_wvalid, 1)
        ctx.set(d.s_axil_bready, 1)
        aw = w = False
        for _ in range(20):
            aw_hs = not aw and ctx.get(d.s_axil_awready)
            w_hs = not w and ctx.get(d.s_axil_wready)
            b_hs = (aw and w) and ctx.get(d.s_axil_bvalid)
            resp = ctx.get(d.s_axil_bresp)
            await ctx.tick()
            aw, w = aw or aw_hs, w or w_hs
            ctx.set(d.s_axil_awvalid, not aw)
            ctx.set(d.s_axil_wvalid, not w)
            if b_hs:
                ctx.set(d.s_axil_bready, 0)
                self.resp = resp
                return resp
        raise AssertionError(f"write {addr:#x}: no response within 20 clocks")

    async def read(self, addr):
        ctx, d = self.ctx, self.dut
        ctx.set(d.s_axil_araddr, addr)
        ctx.set(d.s_axil_arvalid, 1)
        ctx.set(d.s_axil_rready, 1)
        ar = False
        for _ in range(20):
            ar_hs = not ar and ctx.get(d.s_axil_arready)
            r_hs = ar and ctx.get(d.s_axil_rvalid)
            data, resp = ctx.get(d.s_axil_rdata), ctx.get(d.s_axil_rresp)
            await ctx.tick()
            ar = ar or ar_hs
            ctx.set(d.s_axil_arvalid, not ar)
            if r_hs:
                ctx.set(d.s_axil_rready, 0)
                self.resp = resp
                return data, resp
        raise AssertionError(f"read {addr:#x}: no response within 20 clocks")

    async def read32(self, addr):
        data, resp = await self.read(addr)
        assert resp == RESP_OKAY, f"read {addr:#x}: response {resp}"
        return data

    async def write32(self, addr, value):
        resp = await self.write(addr, value)
        assert resp == RESP_OKAY, f"write {addr:#x}: response {resp}"


def run(dut, bench, *processes):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    for process in processes:
        sim.add_process(process)
    sim.run()


def test_bank_semantics():
    regmap = small_map()
    dut = AXI4LiteRegisterBank(regmap, addr_width=regmap.addr_width + 1)  # room above it
    strobes = []

    async def watch_strobes(ctx):
        # Sampled at each clock edge, before it: the strobe and the value it announces.
        async for clk_edge, rst, mac_w, mac, *rest in ctx.tick().sample(
            dut.blk_mac_written, dut.blk_mac, *dut.blk_weight_written, *dut.blk_weight
        ):
            ws, weights = rest[:4], rest[4:]
            if mac_w or any(ws):
                strobes.append(("mac" if mac_w else f"weight{ws.index(1)}", mac, weights))

    async def bench(ctx):
        bus = SimBus(ctx, dut)
        regs = AsyncRegisters(bus, regmap)
        ctx.set(dut.sys_map_id, regmap.fingerprint())
        await regs.check()
        assert await regs.read("sys.ident") == IDENT
        # RW resets, RO values, arrays.
        assert await regs.read("blk.mac") == 0x0200_0000_0001
        assert [await regs.read("blk.weight", i) for i in range(4)] == [1, 1, 1, 1]
        ctx.set(dut.blk_count, 0xABCDE)
        for i, lane in enumerate(dut.blk_lanes):
            ctx.set(lane, 0x100 + i)
        assert await regs.read("blk.count") == 0xABCDE
        assert [await regs.read(f"blk.lanes[{i}]") for i in range(3)] == [0x100, 0x101, 0x102]
        # Wide RW: the low word is staged, the top word commits both in one clock.
        await regs.write("blk.weight", 7, 2)
        assert strobes[-1][0] == "weight2" and strobes[-1][2] == [1, 1, 7, 1]
        mac_addr = regmap.address("blk", "mac")
        assert await bus.write(mac_addr, 0xDDCCBBAA) == RESP_OKAY
        assert ctx.get(dut.blk_mac) == 0x0200_0000_0001, "a low-word write took effect alone"
        assert strobes[-1][0] == "weight2"
        assert await bus.write(mac_addr + 4, 0x1122) == RESP_OKAY
        assert ctx.get(dut.blk_mac) == 0x1122_DDCCBBAA
        assert strobes[-1][0] == "mac" and len([s for s in strobes if s[0] == "mac"]) == 1
        await bus.write(mac_addr + 4, 0x3344, strb=0b0001)  # top word alone, byte 0 only
        assert ctx.get(dut.blk_mac) == 0x1144_DDCCBBAA
        await regs.write("blk.mac", 0xFFFF_0000_1234)
        assert await regs.read("blk.mac") == 0xFFFF_0000_1234
        # 64-bit RO: the high word comes from the snapshot of the low word's read.
        big = regmap.address("blk", "big")
        ctx.set(dut.blk_big, 0x0000_0005_FFFF_FFF0)
        assert await bus.read32(big) == 0xFFFF_FFF0
        ctx.set(dut.blk_big, 0x0000_0006_0000_0001)  # the carry, between the reads
        assert await bus.read32(big + 4) == 5
        assert await regs.read("blk.big") == 0x0000_0006_0000_0001
        # W1C: events set sticky bits, writing 1 clears, an event held during the clear wins.
        ctx.set(dut.blk_flags, 0b10_0000_0101)
        await ctx.tick()
        ctx.set(dut.blk_flags, 0)
        assert await regs.read("blk.flags") == 0b10_0000_0101
        assert ctx.get(dut.blk_flags_sticky) == 0b10_0000_0101
        await regs.clear("blk.flags", 0b1)
        assert await regs.read("blk.flags") == 0b10_0000_0100
        ctx.set(dut.blk_flags, 0b100)
        await regs.clear("blk.flags")
        ctx.set(dut.blk_flags, 0)
        assert await regs.read("blk.flags") == 0b100, "an event during its clear was lost"
        flags = regmap.address("blk", "flags")
        await bus.write(flags, 0xFFFF_FFFF, strb=0b0010)  # byte 1 only: bit 2 stays
        assert await regs.read("blk.flags") == 0b100
        await regs.clear("blk.flags")
        assert await regs.read("blk.flags") == 0
        # Refusals: an RO write (SLVERR, no effect), unmapped (DECERR, reads 0).
        assert await bus.write(regmap.address("blk", "count"), 1) == RESP_SLVERR
        assert await bus.write(big + 4, 1) == RESP_SLVERR
        assert await regs.read("blk.count") == 0xABCDE
        for addr in (regmap.address("sys", "scratch") + 4, regmap.size, (1 << dut.addr_width) - 4):
            assert await bus.read(addr) == (0, RESP_DECERR)
            assert await bus.write(addr, 0xFFFFFFFF) == RESP_DECERR
        assert await regs.read("blk.mac") == 0xFFFF_0000_1234
        # Driver refusals never reach the bus.
        for bad in (
            lambda: regs.write("blk.count", 1),
            lambda: regs.write("blk.flags", 1),
            lambda: regs.write("blk.weight", 256, 0),
            lambda: regs.read("blk.weight"),
            lambda: regs.read("blk.nothing"),
            lambda: regs.read("blk.weight", 4),
            lambda: regs.write("blk.mac", -1),
            lambda: regs.clear("blk.mac"),
        ):
            with pytest.raises(RegisterError):
                await bad()

    run(dut, bench, watch_strobes)


def test_driver_refuses_another_map():
    regmap = small_map()
    other = RegisterMap(
        [system_block(), RegisterBlock("blk", [Register("count", 21, Access.RO, doc="an RO counter")])],
        name="t",
    )
    dut = AXI4LiteRegisterBank(regmap)

    async def bench(ctx):
        ctx.set(dut.sys_map_id, regmap.fingerprint())
        with pytest.raises(RegisterError, match="is not this description"):
            await AsyncRegisters(SimBus(ctx, dut), other).check()

    run(dut, bench)


def test_bank_ports_follow_the_description():
    regmap = reference_map()
    bank = AXI4LiteRegisterBank(regmap)
    bank._MustUse__silence = True  # only its signature is checked
    members = bank.signature.members
    expected = set(n for n in members if n.startswith("s_axil_"))
    for blk, reg in regmap.registers():
        name = port_name(blk, reg)
        if reg.const:
            assert name not in members
            continue
        member = members[name]
        assert member.shape.width == reg.width
        assert member.dimensions == ((reg.count,) if reg.count > 1 else ())
        assert member.flow == (wiring.Out if reg.access == Access.RW else wiring.In)
        if reg.access == Access.RW:
            assert member.init == reg.reset
        expected.add(name)
        if reg.strobe:
            expected.add(f"{name}_written")
        if reg.access == Access.W1C:
            expected.add(f"{name}_sticky")
    assert set(members) == expected


def test_reference_bank_exports_lint_clean(tmp_path):
    bank = AXI4LiteRegisterBank(reference_map())
    v_path, _ = write_export(bank, "gse_regs_bank", {}, tmp_path)
    ok, out = lint([v_path], "gse_regs_bank")
    assert ok, out


def test_arbiter_weight_write_is_one_cfg_transfer():
    """The hand-described grant_arbiter.weight[i]: a bus write is one s_cfg transfer
    (tenant i, the value) into a real GrantArbiter, wired by connect_block."""
    from amaranth import Module
    from opengse.rtl.dgsq.arbiter import GrantArbiter
    from opengse.rtl.regs.blocks import block_registers, connect_block

    arbiter = GrantArbiter(n_req=4, buffer_credits=256, grant_credits=64, n_tenants=4)
    regmap = RegisterMap([system_block(), block_registers("grant_arbiter", arbiter)])
    bank = AXI4LiteRegisterBank(regmap)
    m = Module()
    m.submodules.bank, m.submodules.arbiter = bank, arbiter
    connect_block(m, bank, "grant_arbiter", regmap["grant_arbiter"], arbiter)
    seen = []

    async def watch(ctx):
        async for _clk, _rst, valid, ready, tenant, weight in ctx.tick().sample(
            arbiter.s_cfg.valid,
            arbiter.s_cfg.ready,
            arbiter.s_cfg.payload.tenant,
            arbiter.s_cfg.payload.weight,
        ):
            if valid:
                seen.append((ready, tenant, weight))

    async def bench(ctx):
        ctx.set(bank.sys_map_id, regmap.fingerprint())
        regs = AsyncRegisters(SimBus(ctx, bank), regmap)
        await regs.check()
        assert [await regs.read("grant_arbiter.weight", i) for i in range(4)] == [1] * 4
        await regs.write("grant_arbiter.weight", 5, 3)
        await regs.write("grant_arbiter.weight", 2, 0)
        await regs.read("grant_arbiter.grants")
        assert seen == [(1, 3, 5), (1, 0, 2)]
        assert await regs.read("grant_arbiter.weight", 3) == 5

    run(m, bench, watch)


def test_connect_block_joins_every_catalog_block():
    """Each block's registers find their ports (stat_<name> or <name>) when joined; a
    register with no such port is an error that names it."""
    from amaranth import Module

    from opengse.rtl.catalog import get_block
    from opengse.rtl.regs.blocks import BLOCK_REGISTERS, PORTS_BUILD, block_registers, connect_block

    for kind in BLOCK_REGISTERS:
        spec = get_block(kind)
        component = spec.factory(**spec.params, **PORTS_BUILD.get(kind, {}))
        regmap = RegisterMap([system_block(), block_registers(kind, component)])
        bank = AXI4LiteRegisterBank(regmap)
        m = Module()
        connect_block(m, bank, kind, regmap[kind], component)
        for obj in (m, bank, component):
            obj._MustUse__silence = True
    tagger = get_block("tagger").build()
    parser = get_block("parser").build()
    parser._MustUse__silence = True
    other = RegisterMap([system_block(), block_registers("parser", parser)])
    bank = AXI4LiteRegisterBank(other)
    with pytest.raises(ValueError, match="no port 'stat_other'"):
        connect_block(Module(), bank, "parser", other["parser"], tagger)
    for obj in (tagger, bank):
        obj._MustUse__silence = True


def counter_map():
    return RegisterMap(
        [
            system_block(),
            RegisterBlock(
                "cnt",
                [
                    Register("ev", 32, Access.RO, count=6, doc="counters kept in the store"),
                    Register("live", 32, Access.RO, doc="a counter read live"),
                    Register("lvl", 10, Access.RO, doc="a level"),
                ],
                doc="stored counters",
            ),
        ],
        name="c",
    )


STEP = 3  # the largest advance per clock the counters are declared with (and reach)


def test_stored_counters_are_exact_across_wraps():
    """Six counters in the bank's CounterStore, each advancing by 0..STEP every clock
    (STEP half the time): every read, back to back, returns the counter's value of one
    clock inside the read, though the low bits wrap every ~20 clocks; reads after the
    counters stop are exact; the live register and the level read as before; writes to
    a stored counter are refused."""
    import random

    regmap = counter_map()
    dut = AXI4LiteRegisterBank(regmap, counters={"cnt_ev": STEP})
    assert dut.counter_bits < 8, "the test is meant to wrap the low bits often"
    rng = random.Random(5)
    totals = [[0] * 6]  # totals[c]: the counters' values driven in clock c
    run_counters = [True]

    async def counters(ctx):
        ctx.set(dut.cnt_live, 0x1234_5678)
        ctx.set(dut.cnt_lvl, 0x2AB)
        async for _ in ctx.tick():
            now = list(totals[-1])
            if run_counters[0]:
                for k in range(6):
                    now[k] = (now[k] + (STEP if rng.random() < 0.5 else rng.randrange(STEP + 1))) % (1 << 32)
            for k, port in enumerate(dut.cnt_ev):
                ctx.set(port, now[k])
            totals.append(now)

    async def bench(ctx):
        bus = SimBus(ctx, dut)
        regs = AsyncRegisters(bus, regmap)
        ctx.set(dut.sys_map_id, regmap.fingerprint())
        start = len(totals)  # a read during the store's first pass after reset
        assert await regs.read("cnt.ev", 5) in [t[5] for t in totals[start - 1 :]]
        assert start < 6, "the first read came after the store's first pass"
        await regs.check()
        for _ in range(400):
            k = rng.randrange(6)
            start = len(totals)
            value = await regs.read("cnt.ev", k)
            window = [t[k] for t in totals[start - 1 :]]
            assert value in window, f"ev[{k}] read {value}, the counter was {window} meanwhile"
        assert totals[-1][0] > 50 * (1 << dut.counter_bits), "the low bits did not wrap often"
        run_counters[0] = False
        await ctx.tick().repeat(3)
        assert [await regs.read("cnt.ev", k) for k in range(6)] == totals[-1]
        assert await regs.read("cnt.live") == 0x1234_5678
        assert await regs.read("cnt.lvl") == 0x2AB
        assert await bus.write(regmap.address("cnt", "ev") + 8, 0) == RESP_SLVERR
        assert await regs.read("cnt.ev", 2) == totals[-1][2]

    run(dut, bench, counters)


def test_stored_counters_refuse_what_is_not_a_counter():
    regmap = counter_map()
    for counters, match in (
        ({"cnt_lvl": 1}, "not a 32-bit RO register"),
        ({"sys_ident": 1}, "no register port|not a 32-bit RO"),
        ({"cnt_nothing": 1}, "no register port"),
        ({"cnt_ev": 0}, "advance per clock"),
    ):
        with pytest.raises(ValueError, match=match):
            AXI4LiteRegisterBank(regmap, counters=counters)
