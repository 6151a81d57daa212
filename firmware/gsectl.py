"""``gsectl``: configure and watch an OpenGSE board through its register map
(docs/management.md).

gsectl TRANSPORT [--map FILE] COMMAND ...

transports (one):
  --eth IFACE [--key KEY] [--dst MAC]   management frames on a network interface (raw socket)
  --uart DEV [--baud N]                 the UART bridge on a serial device
  --sim SOCKET [--key KEY]              management frames to a simulation's Unix socket

commands:
  counters [BLOCK]          every counter (RO register), of one block or all
  read REG                  one register: block.name or block.name[i]
  write REG VALUE           one RW register (decimal or 0x hex)
  table set MAC NODE PORT   the leaf's destination table: MAC -> (dst_node, host port)
  table show                the valid entries
  links                     link state and health per uplink, with their frame counters
  watch [BLOCK]             counter rates, refreshed until Ctrl-C

``--map FILE`` is the JSON register map the bitstream was built with
(``RegisterMap.as_dict()``, as ``gse build`` writes it beside the bitstream, with the
core clock ``clock_hz`` that ``watch`` needs); the default is the reference map of
``gse regs``. Every
error (unknown register, value out of range, no answer) is one line on stderr and a
non-zero exit.
"""

import argparse
import json
import sys
import time

__all__ = ["main", "GsectlError"]

DEFAULT_KEY = 0x4F50454E_47534521  # rtl/mgmt/protocol.py's DEFAULT_KEY


class GsectlError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise GsectlError(message)


def _int(text, what):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        raise GsectlError(f"{what} {text!r} is not an integer (decimal or 0x hex)") from None


def _load_map(path):
    """``(register map, its core clock in Hz or None)``."""
    from opengse.rtl.regs.description import RegisterMap

    if path is None:
        from opengse.rtl.regs.blocks import reference_map

        return reference_map(), None
    try:
        with open(path) as f:
            doc = json.load(f)
        clock_hz = doc.get("clock_hz")
        if clock_hz is not None and not (isinstance(clock_hz, (int, float)) and clock_hz > 0):
            raise ValueError(f"clock_hz must be a positive number, not {clock_hz!r}")
        return RegisterMap.from_dict(doc), clock_hz
    except OSError as e:
        raise GsectlError(f"cannot read the register map {path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise GsectlError(f"{path} is not a register map (RegisterMap.as_dict JSON): {e}") from None


def open_bus(args):
    """The bus of the transport the arguments name."""
    from .transport import DatagramLink, FrameBus, RawEthernetLink, UartBus, parse_mac

    key = _int(args.key, "--key") if args.key is not None else DEFAULT_KEY
    if not 0 <= key < 2**64:
        raise GsectlError("--key must fit 64 bits")
    try:
        dst = parse_mac(args.dst) if args.dst else b"\xff" * 6
    except ValueError as e:
        raise GsectlError(f"--dst: {e}") from None
    if args.uart:
        return UartBus(args.uart, args.baud, args.timeout, args.retries)
    link = RawEthernetLink(args.eth) if args.eth else DatagramLink(args.sim)
    return FrameBus(link, key, dst, args.timeout, args.retries)


def _counters(regmap, block=None):
    from opengse.rtl.regs.description import Access

    if block is not None:
        try:
            blocks = [regmap[block]]
        except KeyError:
            raise GsectlError(
                f"unknown block {block!r}; blocks: " + ", ".join(b.name for b in regmap)
            ) from None
    else:
        blocks = list(regmap)
    out = []
    for blk in blocks:
        for reg in blk:
            if reg.access == Access.RO and not reg.const:
                for i in range(reg.count):
                    out.append((f"{blk.name}.{reg.name}" + (f"[{i}]" if reg.count > 1 else ""), reg, i))
    return out


def _read_all(regs, names):
    return {name: regs.read(name.split("[")[0], i if reg.count > 1 else None) for name, reg, i in names}


def cmd_counters(regs, args, out):
    for name, value in _read_all(regs, _counters(regs.map, args.block)).items():
        print(f"{name:40} {value}", file=out)


def cmd_read(regs, args, out):
    print(_fmt(args.reg, regs.read(args.reg)), file=out)


def _fmt(name, value):
    return f"{name} = {value} ({value:#x})"


def cmd_write(regs, args, out):
    value = _int(args.value, "value")
    regs.write(args.reg, value)
    print(_fmt(args.reg, regs.read(args.reg)), file=out)


def _need_leaf(regs):
    if "leaf" not in [b.name for b in regs.map]:
        raise GsectlError("this register map has no leaf block (no destination table or links): give --map")


def _mac_text(value):
    return ":".join(f"{(value >> (8 * i)) & 0xFF:02x}" for i in range(6))


def _table_size(regs):
    return 1 << regs.map["leaf"]["dest_index"].width


def _entries(regs):
    for i in range(_table_size(regs)):
        regs.write("leaf.dest_index", i)
        yield (
            i,
            regs.read("leaf.dest_rd_valid"),
            regs.read("leaf.dest_rd_mac"),
            regs.read("leaf.dest_rd_node"),
            regs.read("leaf.dest_rd_port"),
        )


def cmd_table(regs, args, out):
    from .transport import parse_mac

    _need_leaf(regs)
    if args.action == "show":
        for i, valid, mac, node, port in _entries(regs):
            if valid:
                print(f"entry {i:3}: {_mac_text(mac)} -> node {node} port {port}", file=out)
        return
    try:
        mac = int.from_bytes(parse_mac(args.mac), "little")  # first byte on the wire in bits 7:0
    except ValueError as e:
        raise GsectlError(str(e)) from None
    node, port = _int(args.node, "NODE"), _int(args.port, "PORT")
    leaf = regs.map["leaf"]
    for what, value, reg in (("NODE", node, "dest_node"), ("PORT", port, "dest_port")):
        if not 0 <= value <= leaf[reg].mask:
            raise GsectlError(f"{what} {value} out of range 0..{leaf[reg].mask}")
    free = None
    for i, valid, emac, _n, _p in _entries(regs):
        if valid and emac == mac:
            free = i  # replace this MAC's entry
            break
        if not valid and free is None:
            free = i
    if free is None:
        raise GsectlError(f"the destination table is full ({_table_size(regs)} entries)")
    regs.write("leaf.dest_index", free)
    regs.write("leaf.dest_mac", mac)
    regs.write("leaf.dest_node", node)
    regs.write("leaf.dest_port", port)
    regs.write("leaf.dest_valid", 1)
    regs.write("leaf.dest_write", 1)
    got = (regs.read("leaf.dest_rd_valid"), regs.read("leaf.dest_rd_mac"), regs.read("leaf.dest_rd_node"))
    if got != (1, mac, node) or regs.read("leaf.dest_rd_port") != port:
        raise GsectlError(f"entry {free} reads back {got}, not what was written")
    print(f"entry {free}: {_mac_text(mac)} -> node {node} port {port}", file=out)


def cmd_links(regs, args, out):
    _need_leaf(regs)
    up, healthy = regs.read("leaf.link_up"), regs.read("leaf.healthy")
    blocks = {b.name: b for b in regs.map}
    for u in range(regs.map["leaf"]["link_up"].width):
        state = ("up" if up >> u & 1 else "DOWN") + (", healthy" if healthy >> u & 1 else ", not healthy")
        extra = []
        for side in ("rx", "tx"):
            blk = blocks.get(f"u{u}_{side}")
            if blk is not None and "frames" in blk:
                extra.append(f"{side} frames {regs.read(f'{blk.name}.frames')}")
        print(f"uplink {u}: {state}" + (" (" + ", ".join(extra) + ")" if extra else ""), file=out)


def cmd_watch(regs, args, out):
    names = _counters(regs.map, args.block)
    names = [n for n in names if n[0] != "sys.uptime"]
    last, t_last = _read_all(regs, names), regs.read("sys.uptime")
    rounds = 0
    try:
        while args.count is None or rounds < args.count:
            time.sleep(args.interval)
            now, t_now = _read_all(regs, names), regs.read("sys.uptime")
            seconds = max(1, t_now - t_last) / args.clock_hz
            lines = []
            for name, _reg, _i in names:
                delta = (now[name] - last[name]) % (1 << _reg.width)
                if delta:
                    lines.append(f"  {name:40} {delta / seconds:14.1f} /s  (total {now[name]})")
            print(f"--- {seconds:.6g} s of board time: {len(lines)} counters moved", file=out)
            for line in lines:
                print(line, file=out)
            out.flush()
            last, t_last, rounds = now, t_now, rounds + 1
    except KeyboardInterrupt:
        print("", file=out)


def build_parser():
    p = _Parser(prog="gsectl", description="configure and watch an OpenGSE board (docs/management.md)")
    t = p.add_mutually_exclusive_group(required=True)
    t.add_argument("--eth", metavar="IFACE", help="management frames on this network interface (raw socket)")
    t.add_argument("--uart", metavar="DEV", help="the UART bridge on this serial device")
    t.add_argument("--sim", metavar="SOCKET", help="management frames to a simulation's Unix datagram socket")
    p.add_argument("--key", help="the 64-bit management key (default: the gateware's DEFAULT_KEY)")
    p.add_argument("--dst", metavar="MAC", help="the board's MAC (default: broadcast)")
    p.add_argument("--baud", type=int, default=115200, help="UART baud rate (default 115200)")
    p.add_argument(
        "--map", metavar="FILE", help="the board's register map (JSON); default: the reference map"
    )
    p.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for each answer (default 1)")
    p.add_argument("--retries", type=int, default=2, help="attempts after the first (default 2)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    sp = sub.add_parser("counters", help="every counter, of one block or all")
    sp.add_argument("block", nargs="?")
    sp = sub.add_parser("read", help="read one register (block.name or block.name[i])")
    sp.add_argument("reg")
    sp = sub.add_parser("write", help="write one RW register")
    sp.add_argument("reg")
    sp.add_argument("value")
    sp = sub.add_parser("table", help="the leaf's destination table")
    tsub = sp.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser, required=True)
    ts = tsub.add_parser("set", help="MAC -> (NODE, PORT): replaces the MAC's entry, else takes a free one")
    ts.add_argument("mac")
    ts.add_argument("node")
    ts.add_argument("port")
    tsub.add_parser("show", help="the valid entries")
    sub.add_parser("links", help="link state and health per uplink")
    sp = sub.add_parser("watch", help="counter rates until Ctrl-C")
    sp.add_argument("block", nargs="?")
    sp.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    sp.add_argument("--count", type=int, help="stop after this many samples")
    sp.add_argument(
        "--clock-hz",
        type=float,
        help="the core clock, for rates (default: the map file's clock_hz, else 125e6)",
    )
    return p


COMMANDS = {
    "counters": cmd_counters,
    "read": cmd_read,
    "write": cmd_write,
    "table": cmd_table,
    "links": cmd_links,
    "watch": cmd_watch,
}


def main(argv=None, out=None):
    from .regs import RegisterError, Registers
    from .transport import TransportError

    out = out if out is not None else sys.stdout
    bus = None
    try:
        args = build_parser().parse_args(argv)
        if args.timeout <= 0 or args.retries < 0:
            raise GsectlError("--timeout must be > 0 and --retries >= 0")
        regmap, map_clock_hz = _load_map(args.map)
        if args.command == "watch":
            if args.clock_hz is None:
                args.clock_hz = map_clock_hz or 125e6
            if args.clock_hz <= 0:
                raise GsectlError("--clock-hz must be > 0")
        bus = open_bus(args)
        regs = Registers(bus, regmap)
        COMMANDS[args.command](regs, args, out)
        return 0
    except (GsectlError, RegisterError, TransportError) as e:
        print(f"gsectl: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if bus is not None:
            bus.close()


if __name__ == "__main__":
    sys.exit(main())
