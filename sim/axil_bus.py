"""AxilBus: the register driver's bus (``read32`` / ``write32``) over a cocotbext-axi
``AxiLiteMaster``, for benches that reach a register bank through AXI4-Lite."""

import random

from cocotb.triggers import with_timeout
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from .cocotb_util import random_pause

from opengse.firmware.regs import RegisterError

__all__ = ["AxilBus"]


class AxilBus:
    """read32/write32 over an AxiLiteMaster; an error response raises
    :class:`~opengse.firmware.regs.RegisterError`, an answer later than ``timeout_us``
    fails the wait."""

    def __init__(self, master, timeout_us=50):
        self.master = master
        self.timeout_us = timeout_us

    @classmethod
    def over(cls, dut, rng, pause=0.3, prefix="s_axil", **kwargs):
        """A master on ``dut``'s ``prefix`` port (clock ``clk``, reset ``rst``) whose five
        channels each pause with probability ``pause`` (own generators seeded from ``rng``)."""
        master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, prefix), dut.clk, dut.rst)
        for ch in (
            master.write_if.aw_channel,
            master.write_if.w_channel,
            master.write_if.b_channel,
            master.read_if.ar_channel,
            master.read_if.r_channel,
        ):
            ch.set_pause_generator(random_pause(random.Random(rng.random()), pause))
        return cls(master, **kwargs)

    async def read32(self, addr):
        resp = await with_timeout(self.master.read(addr, 4), self.timeout_us, "us")
        if resp.resp != AxiResp.OKAY:
            raise RegisterError(f"read {addr:#x}: {resp.resp.name}")
        return int.from_bytes(resp.data, "little")

    async def write32(self, addr, value):
        resp = await with_timeout(self.master.write(addr, value.to_bytes(4, "little")), self.timeout_us, "us")
        if resp.resp != AxiResp.OKAY:
            raise RegisterError(f"write {addr:#x}: {resp.resp.name}")
