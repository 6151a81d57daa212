"""gsectl end to end: the real command (a subprocess running the installed ``gsectl``,
its transports and the generated driver) against the management port on Verilator,
through management frames (its ``--sim`` Unix datagram socket, pumped into ``s_axis``
and back from ``m_axis``) and through UART bytes (a pseudo-terminal, its ``--uart``
device, pumped bit by bit into ``uart_rx`` and back from ``uart_tx``)."""

import json
import os
import socket
import subprocess
import tempfile
import time
import tty
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from cocotb_mgmt import Bench
from mgmt_top import ALLOWED_PORT, TEST_KEY

GSECTL = os.environ.get("GSECTL", "gsectl")
WALL_LIMIT_S = 120  # per gsectl call


class Pumps:
    """Carries frames between a Unix datagram socket and the DUT's streams, and bytes
    between a pseudo-terminal and the DUT's UART pins."""

    def __init__(self, bench, tmp, tuser=ALLOWED_PORT << 1):
        self.b = bench
        self.tuser = tuser  # of the frames into the DUT: mgmt_top's port number
        self.sock_path = str(Path(tmp) / "frames.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.sock.setblocking(False)
        self.peer = None
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.tty = os.ttyname(self.slave)
        self.to_uart = bytearray()
        self.frames_in = 0
        cocotb.start_soon(self._uart_sender())

    async def _uart_sender(self):
        while True:
            if self.to_uart:
                data = bytes(self.to_uart)
                self.to_uart.clear()
                await self.b.uart.send(data)
            else:
                await ClockCycles(self.b.dut.clk, 10)

    async def step(self):
        """Move whatever is waiting, one way and the other; True if anything moved."""
        moved = False
        try:
            data, self.peer = self.sock.recvfrom(65536)
            await self.b.src.send(AxiStreamFrame(data, tuser=self.tuser))
            self.frames_in += 1
            moved = True
        except BlockingIOError:
            pass
        while not self.b.sink.empty():
            out = self.b.sink.recv_nowait()
            if self.peer is not None:
                try:
                    self.sock.sendto(bytes(out.tdata), self.peer)
                except OSError:
                    pass  # that gsectl has exited
            moved = True
        try:
            data = os.read(self.master, 256)
            self.to_uart += data
            moved = moved or bool(data)
        except BlockingIOError:
            pass
        if self.b.uart.received:
            os.write(self.master, self.b.uart.take(len(self.b.uart.received)))
            moved = True
        return moved

    def close(self):
        self.sock.close()
        os.close(self.master)
        os.close(self.slave)

    async def gsectl(self, *args, transport="sim", timeout=5):
        """Run gsectl to its end, pumping meanwhile; ``(returncode, stdout, stderr)``."""
        where = ["--sim", self.sock_path] if transport == "sim" else ["--uart", self.tty]
        cmd = [
            GSECTL,
            *where,
            "--map",
            self.map_path,
            "--key",
            hex(TEST_KEY),
            "--timeout",
            str(timeout),
            *args,
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        start = time.monotonic()
        while proc.poll() is None:
            if time.monotonic() - start > WALL_LIMIT_S:
                proc.kill()
                raise AssertionError(f"gsectl {' '.join(args)} did not end within {WALL_LIMIT_S} s")
            if not await self.step():
                time.sleep(0.0003)  # let the simulation wait for gsectl, not race ahead
            await ClockCycles(self.b.dut.clk, 20)
        out, err = proc.communicate()
        self.b.dut._log.info("gsectl %s -> %d\n%s%s", " ".join(args), proc.returncode, out, err)
        return proc.returncode, out, err


def _mac_int(text):
    return int.from_bytes(bytes(int(p, 16) for p in text.split(":")), "little")


async def lookup(dut, mac):
    dut.lookup_key.value = _mac_int(mac)
    await ClockCycles(dut.clk, 2)
    return int(dut.lookup_hit.value), int(dut.lookup_node.value), int(dut.lookup_port.value)


def counters(text):
    out = {}
    for line in text.splitlines():
        name, value = line.split()
        out[name] = int(value)
    return out


@cocotb.test()
async def gsectl_end_to_end(dut):
    b = Bench(dut, 3)
    b.src.set_pause_generator(None)
    await b.start()
    dut.link_up.value = 0b01
    with tempfile.TemporaryDirectory(prefix="gsectl-e2e-") as tmp:
        p = Pumps(b, tmp)
        p.map_path = str(Path(tmp) / "map.json")
        Path(p.map_path).write_text(json.dumps(b.map.as_dict()))

        # two frames that must be refused, sent before gsectl looks at the counters
        await b.send(b.frame([(2, b.addr("sys.scratch"), 0xBAD)], key=TEST_KEY ^ 0xFF))
        await b.send(b.frame([(2, b.addr("sys.scratch"), 0xBAD)]), port=ALLOWED_PORT ^ 1)

        rc, out, err = await p.gsectl("read", "sys.ident")
        assert rc == 0 and out.strip() == "sys.ident = 1196639537 (0x47534531)", (rc, out, err)

        rc, out, err = await p.gsectl("counters", "mgmt")
        assert rc == 0, err
        c = counters(out)
        assert c["mgmt.mgmt_bad_key"] == 1 and c["mgmt.mgmt_bad_port"] == 1, c
        assert c["mgmt.mgmt_requests"] >= 3 and c["mgmt.mgmt_malformed"] == 0, c

        # the destination table, through frames; then the table itself answers a lookup
        assert await lookup(dut, "02:00:00:00:00:07") == (0, 0, 0)
        rc, out, err = await p.gsectl("table", "set", "02:00:00:00:00:07", "5", "1")
        assert rc == 0 and "-> node 5 port 1" in out, (rc, out, err)
        assert await lookup(dut, "02:00:00:00:00:07") == (1, 5, 1)

        rc, out, err = await p.gsectl("write", "sys.scratch", "0x1234")
        assert rc == 0 and "0x1234" in out, (rc, out, err)

        # the UART: the same driver code over a pseudo-terminal
        rc, out, err = await p.gsectl("read", "sys.scratch", transport="uart")
        assert rc == 0 and out.strip() == "sys.scratch = 4660 (0x1234)", (rc, out, err)
        rc, out, err = await p.gsectl("table", "set", "02:00:00:00:00:08", "9", "0", transport="uart")
        assert rc == 0 and "entry 1:" in out and "-> node 9 port 0" in out, (rc, out, err)
        assert await lookup(dut, "02:00:00:00:00:08") == (1, 9, 0)
        assert await lookup(dut, "02:00:00:00:00:07") == (1, 5, 1)
        # a MAC already in the table keeps its entry
        rc, out, err = await p.gsectl("table", "set", "02:00:00:00:00:07", "6", "0", transport="uart")
        assert rc == 0 and "entry 0:" in out, (rc, out, err)
        assert await lookup(dut, "02:00:00:00:00:07") == (1, 6, 0)
        rc, out, err = await p.gsectl("table", "show")
        assert rc == 0 and out.splitlines() == [
            "entry   0: 02:00:00:00:00:07 -> node 6 port 0",
            "entry   1: 02:00:00:00:00:08 -> node 9 port 0",
        ], out
        rc, out, err = await p.gsectl("counters", "mgmt", transport="uart")
        assert rc == 0 and counters(out)["mgmt.uart_requests"] > 10, out

        rc, out, err = await p.gsectl("links")
        assert rc == 0 and out.splitlines() == ["uplink 0: up, healthy", "uplink 1: DOWN, not healthy"], out

        rc, out, err = await p.gsectl(
            "watch", "mgmt", "--count", "2", "--interval", "0.05", "--clock-hz", "1e8"
        )
        assert rc == 0 and out.count("--- ") == 2 and "mgmt.mgmt_requests" in out, out

        # bad input: one line on stderr, exit 2
        for args, words in [
            (("read", "sys.nope"), "unknown register sys.nope"),
            (("read", "nope.x"), "unknown block 'nope'"),
            (("write", "sys.scratch", "0x1ffffffff"), "out of range"),
            (("write", "sys.ident", "1"), "read-only"),
            (("write", "sys.scratch", "twelve"), "not an integer"),
            (("table", "set", "02:00:00:00:00", "1", "1"), "not a MAC address"),
            (("table", "set", "02:00:00:00:00:09", "70000", "1"), "NODE 70000 out of range"),
            (("counters", "nope"), "unknown block 'nope'"),
        ]:
            rc, out, err = await p.gsectl(*args)
            assert rc == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, (
                args,
                rc,
                err,
            )
        before = (await p.gsectl("counters", "mgmt"))[1]
        rc, out, err = await p.gsectl("--key", "0x1", "--retries", "0", "read", "sys.ident", timeout=0.3)
        assert rc == 2 and "no answer to a management frame" in err and err.count("\n") == 1, (rc, err)
        after = (await p.gsectl("counters", "mgmt"))[1]
        assert counters(after)["mgmt.mgmt_bad_key"] == counters(before)["mgmt.mgmt_bad_key"] + 1, (
            before,
            after,
        )
        p.close()
