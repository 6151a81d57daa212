"""What the fabric's C++ main is told at run time: the run file.

A :class:`RunConfig` is one run: cycles, sample interval, the traffic (pattern, frame
size, tenants, hash seed), link failures and the control-frame loss rate.
:func:`run_file` turns it, with a built model's address map (:mod:`.harness`), into
the text the C++ main reads: ``cycles``, ``sample``, ``reset`` and one ``w CYCLE ADDR
DATA`` line per 32-bit configuration write. The writes, in order:

1. every spine's route table: node ``n`` -> port ``n // H`` (its leaf);
2. every leaf: ``node_base`` = ``l*H``, the destination table (host n's MAC
   ``02:00:00:00:00:nn`` -> node n, port ``n % H``), tenant and class per host port,
   ``link_up`` all ones, the ECMP hash seed where the leaf has one;
3. every control-loss unit's threshold (``rate x 2**32``);
4. every generator's configuration and destination table (:mod:`.traffic`), its
   ``enable`` last: traffic starts when the configuration is complete;
5. at its cycle, each ``--fail-uplink LEAF:PORT@CYCLE``: the link from leaf LEAF's
   uplink PORT to spine PORT fails (its transmit path: a dead optic), and the leaf's
   ``link_up[PORT]`` drops in the same clock (the PHY's loss-of-signal / remote fault).
   The spine-to-leaf direction keeps working.

Cycles count from the end of reset; configuration takes one clock per word; traffic
starts when the last generator is enabled (no earlier than clock 4096, when the
checkers have cleared their state).
"""

from dataclasses import dataclass, field

from amaranth.hdl import Const

__all__ = ["RunConfig", "FailUplink", "parse_fail_uplink", "run_file", "host_mac", "Writes"]


def host_mac(n):
    """Host n's MAC as the leaf's table holds it (first byte on the wire in bits 7:0)."""
    octets = [0x02, 0, 0, 0, 0, n & 0xFF]
    return sum(b << (8 * i) for i, b in enumerate(octets))


@dataclass(frozen=True)
class FailUplink:
    leaf: int
    port: int
    cycle: int


def parse_fail_uplink(text):
    """``LEAF:PORT@CYCLE`` -> :class:`FailUplink`; ``ValueError`` with the reason."""
    try:
        where, cycle = text.split("@")
        leaf, port = where.split(":")
        out = FailUplink(int(leaf), int(port), int(cycle))
    except ValueError:
        raise ValueError(f"--fail-uplink takes LEAF:PORT@CYCLE (e.g. 1:2@200000), not {text!r}") from None
    if min(out.leaf, out.port, out.cycle) < 0:
        raise ValueError(f"--fail-uplink {text!r}: numbers must be >= 0")
    return out


@dataclass
class RunConfig:
    """One run of the fabric. ``warmup`` clocks after configuration are left out of the
    measured window; ``sample`` is the counter sampling interval (throughput over
    time)."""

    pattern: str = "permutation"
    frame_bytes: int = 1500
    tenants: int = 1
    cycles: int = 400_000
    warmup: int = 100_000
    sample: int = 5_000
    hash_seed: int = 1
    fail_uplinks: list = field(default_factory=list)
    control_loss: float = 0.0
    rate: float = 1.0  # offered load, fraction of host line rate
    flows_per_dst: int = 1  # flows (queue pairs) per destination

    def check(self, shape):
        if self.cycles <= self.warmup:
            raise ValueError(f"--cycles ({self.cycles}) must exceed the warm-up ({self.warmup})")
        if not 60 <= self.frame_bytes <= 9000:
            raise ValueError(f"--frame-bytes must be 60..9000, not {self.frame_bytes}")
        if not 0 <= self.control_loss < 1:
            raise ValueError(f"--control-loss must be in [0, 1), not {self.control_loss}")
        if not 1 <= self.flows_per_dst <= 64:
            raise ValueError(f"--flows must be 1..64, not {self.flows_per_dst}")
        if not 0 < self.rate <= 1:
            raise ValueError(f"--rate must be in (0, 1], not {self.rate}")
        if not 1 <= self.tenants <= 16:
            raise ValueError(f"--tenants must be 1..16, not {self.tenants}")
        for f in self.fail_uplinks:
            if f.leaf >= shape.leaves or f.port >= shape.spines:
                raise ValueError(
                    f"--fail-uplink {f.leaf}:{f.port}: the fabric has leaves 0..{shape.leaves - 1} "
                    f"and uplinks 0..{shape.spines - 1}"
                )
            if f.cycle >= self.cycles:
                raise ValueError(f"--fail-uplink at cycle {f.cycle} is after the run ends ({self.cycles})")


class Writes:
    """Configuration writes by item name, resolved through a model's address map."""

    def __init__(self, address_map):
        self.items = {c["name"]: c for c in address_map["config"]}
        self._names = {c["addr"] + k: c["name"] for c in address_map["config"] for k in range(c["words"])}
        self.lines = []  # (cycle, addr, data)

    def has(self, name):
        return name in self.items

    def put(self, name, value, cycle=0):
        item = self.items.get(name)
        if item is None:
            raise KeyError(f"the model has no configuration item {name!r}")
        value = int(value)
        if value < 0 or value >> item["width"]:
            raise ValueError(f"{name}: {value} does not fit {item['width']} bits")
        for k in range(item["words"]):
            self.lines.append((cycle, item["addr"] + k, (value >> (32 * k)) & 0xFFFFFFFF))

    def put_struct(self, name, layout, fields, cycle=0):
        self.put(name, Const.cast(layout.const(fields)).value, cycle)

    def done_at(self, name_prefix_or_pred):
        """The clock after the last write of the items matching (a name predicate)
        went out, as the C++ main sends them (in cycle order, one a clock)."""
        t, end = 0, 0
        for cycle, addr, _data in sorted(self.lines, key=lambda x: x[0]):
            t = max(t, cycle) + 1
            if name_prefix_or_pred(self._names[addr]):
                end = t
        return end

    def text(self):
        # The C++ main sends writes in file order, one a clock, none before its cycle.
        lines = sorted(self.lines, key=lambda t: t[0])
        return "".join(f"w {c} {a} {d}\n" for c, a, d in lines)


def fabric_writes(writes, shape, lb, run):
    """Steps 1-3 and 5 of the module doc (the generators are :mod:`.traffic`'s)."""
    from opengse.rtl.tops.leaf.dest_lookup import dest_entry_layout
    from opengse.rtl.tops.spine import route_layout

    L, S, H = shape.leaves, shape.spines, shape.hosts
    routes = route_layout(L, shape.nodes)
    dest = dest_entry_layout(shape.nodes)
    for s in range(S):
        for n in range(shape.nodes):
            port = n // H if n < shape.n_hosts else L  # L: no route
            writes.put_struct(f"spine{s}.s_route", routes, {"node": n, "port": port})
    for l in range(L):
        writes.put(f"leaf{l}.node_base", l * H)
        writes.put(f"leaf{l}.link_up", (1 << S) - 1)
        for n in range(shape.n_hosts):
            writes.put_struct(
                f"leaf{l}.s_dest",
                dest,
                {"index": n, "in_use": 1, "mac": host_mac(n), "dst_node": n, "port": n % H},
            )
        for p in range(H):
            tenant = (l * H + p) % run.tenants
            writes.put(f"leaf{l}.host_tenant_{p}", tenant)
            writes.put(f"leaf{l}.host_tc_{p}", 0)
        if writes.has(f"leaf{l}.ecmp_seed"):
            writes.put(f"leaf{l}.ecmp_seed", run.hash_seed & 0xFFFFFFFF)
    threshold = min(0xFFFFFFFF, int(round(run.control_loss * 2**32)))
    if threshold:
        for l in range(L):
            for u in range(S):
                writes.put(f"loss_up{l}_{u}.threshold", threshold)
                writes.put(f"loss_dn{u}_{l}.threshold", threshold)


def failure_writes(writes, shape, run, at):
    """Step 5: ``at(cycle)`` maps a run cycle to the write cycle (after configuration)."""
    down = {}
    for f in run.fail_uplinks:
        writes.put(f"fab_up{f.leaf}_{f.port}.fail", 1, at(f.cycle))
        down[f.leaf] = down.get(f.leaf, (1 << shape.spines) - 1) & ~(1 << f.port)
        writes.put(f"leaf{f.leaf}.link_up", down[f.leaf], at(f.cycle))


def run_file(model_map, shape, lb, run):
    """The run file's text. Returns ``(text, start)``: ``start`` is the clock traffic
    starts (after the configuration writes); the run lasts ``start + run.cycles``
    clocks, then the checkers' histograms are read out."""
    from .traffic import generator_writes, readouts

    w = Writes(model_map)
    fabric_writes(w, shape, lb, run)
    generator_writes(w, shape, run)
    start = w.done_at(lambda name: name.endswith(".enable"))
    failure_writes(w, shape, run, lambda c: start + c)
    head = f"cycles {start + run.cycles}\nsample {run.sample}\nreset 16\nprogress 0.5\n"
    return head + w.text() + readouts(model_map, shape), start
