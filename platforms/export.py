"""Export an Amaranth component as Verilog an integrator can read, plus its manifest.

Port names follow the brief (section 5):

* a packet stream (:func:`~opengse.rtl.lib.stream.AXIStreamSignature`) member ``s_axis``
  becomes ``s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser, s_axis_tvalid,
  s_axis_tready``;
* any other ``stream.Signature`` member ``m_hdr`` with a struct payload becomes
  ``m_hdr_valid, m_hdr_ready`` and one ``m_hdr_<field>`` per struct member;
* arrays of members get an index: ``s_axis_0_tdata``;
* plain signals keep their names (``stat_spoof``); nested signatures join with ``_``.

The design is flattened into one module named as asked, except submodules listed in
``keep_modules`` (e.g. memories an ASIC team replaces with compiled SRAMs), which stay
separate modules with the fixed names given, in the same file. Each kept module is
converted on its own, so its ports have fixed names taken from its interface: ``clk``,
``rst``, then its ``wiring.Signature`` members named as above (a ``VOQRam`` has
``w_en, w_addr, w_data, r0_addr, r0_data, ...``), or, for a plain ``Elaboratable``, its
public signal attributes under their signal names. The parent instantiates it by that
name. The manifest lists each kept module with its ports. Initial values are stripped
from the Verilog: every register is set by the synchronous reset ``rst``.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import (
    ClockDomain,
    ClockSignal,
    Elaboratable,
    Fragment,
    Instance,
    Module,
    ResetSignal,
    Signal,
    Value,
    ValueCastable,
)
from amaranth.hdl._ast import SignalDict, SignalSet
from amaranth.hdl._ir import PortDirection
from amaranth.hdl._mem import MemoryInstance
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import PulseSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth._toolchain.yosys import find_yosys

from opengse.rtl.lib.sram import SRAM
from opengse.rtl.lib.stream import is_axis

__all__ = [
    "port_map",
    "export_verilog",
    "kept_modules",
    "sram_modules",
    "manifest",
    "write_export",
    "WAIVERS",
    "waivers_for",
]

#: Verilator waivers for exported Verilog (every one justified in its comment); each
#: export gets the part that applies to it as ``<module>.vlt`` (:func:`waivers_for`).
WAIVERS = Path(__file__).resolve().parent / "verilator_waivers.vlt"


def waivers_for(module, text=None):
    """The waiver file shipped with ``<module>.v``: the header of :data:`WAIVERS`, every
    group of waivers (a comment and its ``lint_off`` lines) that names no file or
    whose ``-file`` patterns match ``<module>.v``; groups that name only other modules'
    files are left out."""
    from fnmatch import fnmatchcase

    text = WAIVERS.read_text() if text is None else text
    head, _, body = text.partition("\n\n")
    groups, current = [], []
    for line in body.splitlines(keepends=True):
        if line.startswith("//") and current and not current[-1].startswith("//"):
            groups.append(current)
            current = []
        current.append(line)
    if current:
        groups.append(current)
    out = [head + "\n\n"]
    for group in groups:
        files = [re.search(r'-file "([^"]*)"', ln) for ln in group if ln.startswith("lint_off")]
        if all(f is not None for f in files) and files:
            if not any(fnmatchcase(f"{module}.v", f.group(1)) for f in files):
                continue
        out.append("".join(group))
    return "".join(out)


def _leaves(prefix, shape, value):
    """(name, value) for each leaf member of a (possibly nested) struct view."""
    if isinstance(shape, data.StructLayout):
        for field_name, field in shape:
            yield from _leaves(f"{prefix}_{field_name}", field.shape, value[field_name])
    else:
        if isinstance(value, ValueCastable):
            value = value.as_value()
        yield prefix, value


def _put(out, name, value, direction):
    # Two members can flatten to one name (a stream payload field called ``valid`` is
    # ``<port>_valid``, like the handshake): refuse, instead of silently losing one.
    if name in out:
        raise ValueError(f"two ports would be named {name!r}: rename one of the members or fields")
    out[name] = (value, direction)


def _walk(prefix, signature, obj, flipped, out, interfaces):
    for name, member in signature.members.items():
        full = f"{prefix}_{name}" if prefix else name
        sub = getattr(obj, name)
        is_in = (member.flow == wiring.In) != flipped
        dims = member.dimensions
        if dims:
            assert len(dims) == 1, "only one-dimensional member arrays are exported"
            items = [(f"{full}_{k}", sub[k]) for k in range(dims[0])]
        else:
            items = [(full, sub)]
        for item_name, item in items:
            if member.is_signature:
                sig = member.signature
                inner_flipped = is_in  # In(sig) flips the signature for its members
                if isinstance(sig, stream.Signature):
                    _stream(item_name, sig, item, inner_flipped, out, interfaces)
                else:
                    _walk(item_name, sig, item, inner_flipped, out, interfaces)
            else:
                direction = PortDirection.Input if is_in else PortDirection.Output
                for leaf_name, value in _leaves(item_name, member.shape, item):
                    _put(out, leaf_name, value, direction)


def _stream(name, sig, intf, flipped, out, interfaces):
    sink = flipped  # an In(stream) member: this block receives the stream
    d_in, d_out = PortDirection.Input, PortDirection.Output
    fwd = d_in if sink else d_out
    bwd = d_out if sink else d_in
    axis = is_axis(sig)
    t = "t" if axis else ""
    ports = {}
    shape = sig.members["payload"].shape
    if axis:
        for field_name, _field in shape:
            ports[f"t{field_name}"] = f"{name}_t{field_name}"
            v = intf.payload[field_name]
            _put(out, f"{name}_t{field_name}", v.as_value() if isinstance(v, ValueCastable) else v, fwd)
    else:
        for leaf_name, value in _leaves(name, shape, intf.payload):
            ports[leaf_name[len(name) + 1 :]] = leaf_name
            _put(out, leaf_name, value, fwd)
    _put(out, f"{name}_{t}valid", intf.valid, fwd)
    _put(out, f"{name}_{t}ready", intf.ready, bwd)
    ports[f"{t}valid"] = f"{name}_{t}valid"
    ports[f"{t}ready"] = f"{name}_{t}ready"
    interfaces.append(
        {
            "name": name,
            "protocol": "axi4-stream" if axis else "valid-ready",
            "role": "slave" if sink else "master",
            "ports": ports,
        }
    )


def port_map(component):
    """Ports with the brief's names: (``{name: (value, PortDirection)}``, interfaces)."""
    out, interfaces = {}, []
    _walk("", component.signature, component, False, out, interfaces)
    return out, interfaces


def export_verilog(component, name, *, keep_modules=None):
    """Verilog text of ``component`` as module ``name``.

    ``keep_modules`` maps the Amaranth hierarchy path of a submodule (e.g.
    ``"core.ram"``) to the fixed module name it keeps in the output."""
    return _export(component, name, keep_modules)[0]


def _is_memory(obj):
    # An SRAM, or another memory that names its module per shape and describes itself
    # (the reorder buffer's SlotRAM, gse_reorder_ram_<depth>x<width>).
    return isinstance(obj, SRAM) or (
        isinstance(obj, wiring.Component)
        and hasattr(obj, "module_name")
        and callable(getattr(obj, "describe", None))
    )


def _cdc(obj):
    """A clock-domain crossing kept as a module of its own: ``(module name, clocks,
    description)`` with ``clocks`` = ``[(clock port, reset port, domain)]``, or None.

    * an ``AsyncFIFO`` is ``gse_cdc_async_fifo_<depth>x<width>``, clocks ``wclk``/``wrst``
      (write side) and ``rclk``/``rrst`` (read side);
    * a ``PulseSynchronizer`` is ``gse_cdc_pulse``, clocks ``iclk``/``irst`` and
      ``oclk``/``orst``.
    Their other ports are their own signals (``w_data, w_en, w_rdy, w_level, r_data,
    r_en, r_rdy, r_level, r_rst``; ``i``, ``o``)."""
    if isinstance(obj, AsyncFIFO) and obj._w_domain != obj._r_domain:  # one domain: no crossing
        w, r = obj._w_domain, obj._r_domain
        return (
            f"gse_cdc_async_fifo_{obj.depth}x{obj.width}",
            [("wclk", "wrst", w), ("rclk", "rrst", r)],
            {
                "kind": "async_fifo",
                "depth": obj.depth,
                "width": obj.width,
                "clocks": {"wclk": w, "rclk": r},
                "pointers": "Gray code, two-flip-flop synchronisers each way",
                "reset": "wrst empties the FIFO; it reaches the read side as r_rst",
            },
        )
    if isinstance(obj, PulseSynchronizer):
        i, o = obj._i_domain, obj._o_domain
        return (
            "gse_cdc_pulse",
            [("iclk", "irst", i), ("oclk", "orst", o)],
            {
                "kind": "pulse_synchronizer",
                "clocks": {"iclk": i, "oclk": o},
                "stages": obj._stages,
                "timing": "a one-clock pulse on i gives a one-clock pulse on o; pulses closer "
                "than a few clocks of the slower domain may merge",
            },
        )
    return None


def sram_modules(fragment):
    """``{hierarchy path: module name}`` of every memory in an elaborated design (the
    fragment of a :class:`_Flat` top): each :class:`~opengse.rtl.lib.sram.SRAM`, and
    each other component with a ``module_name`` and a ``describe()`` (the reorder
    buffer's slot RAM). They are kept as modules of their own, one per shape, found
    where they are instantiated."""
    found = {}

    def walk(frag, path):
        for sub, sub_name, _src in frag.subfragments:
            obj = (sub.origins or (sub,))[0]
            sub_path = path + (sub_name,)
            if _is_memory(obj):
                found[".".join(sub_path[1:])] = obj.module_name
            elif _cdc(obj) is not None:
                found[".".join(sub_path[1:])] = _cdc(obj)[0]
            else:
                walk(sub, sub_path)

    walk(fragment, ())
    return found


def _keep(fragment, keep_modules):
    # Every SRAM is kept under its shape's name; ``keep_modules`` may name other
    # submodules to keep (an SRAM listed there still gets its shape's name).
    return {**(keep_modules or {}), **sram_modules(fragment)}


def _export(component, name, keep_modules):
    top = _Flat(component)
    fragment = Fragment.get(top, None)
    keep = _keep(fragment, keep_modules)
    if not keep:
        il = _to_rtlil(fragment, top.ports, name)
        return _run_yosys([il], name), []
    kept = _cut_kept(fragment, keep)
    il = _to_rtlil(fragment, top.ports, name)
    ils = [il]
    converted = {}
    for k in kept:
        sub_il = k.rtlil
        if k.module in converted:
            # Two paths may share a module only if they are the same memory.
            if converted[k.module] != sub_il:
                raise ValueError(f"keep_modules: {k.module!r} names two different modules")
            continue
        converted[k.module] = sub_il
        ils.append(sub_il)
    return _run_yosys(ils, name), kept


def _run_yosys(ils, name):
    script = [f"read_rtlil <<rtlil\n{_port_ids_from_one(il)}\nrtlil" for il in ils]
    script += [
        "proc",
        "memory_collect",
        f"hierarchy -top {_escape(name)}",
        # Kept modules carry keep_hierarchy: flatten leaves them (and flattens
        # whatever sits inside them).
        "flatten",
        "opt -purge",
        "attrmap -remove src -remove generator -remove top -remove amaranth.hierarchy"
        " -remove amaranth.decoding -remove keep_hierarchy -remove init",
        "attrmap -modattr -remove src -remove generator -remove top"
        " -remove amaranth.hierarchy -remove keep_hierarchy",
        "write_verilog -norename -noattr",
    ]
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    verilog = yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)
    return _plain_function_names(_strip_memory_zero_init(verilog))


def _plain_function_names(verilog):
    # Yosys writes each multi-way mux as a Verilog function named after its cell
    # (`\$flatten\core.$procmux$21`); Icarus Verilog takes a call to a name that starts
    # with `$` for a system function and stops. Give each such function a plain,
    # deterministic name (numbered in order of declaration, per module).
    out, start = [], 0
    for mod in re.finditer(r"^module .*?^endmodule\n", verilog, flags=re.M | re.S):
        text = mod.group(0)
        names = re.findall(r"^  function (?:\[[^\]]*\] )?(\\\$\S+) ;$", text, flags=re.M)
        for k, name in enumerate(names):
            text = re.sub(re.escape(name) + r"(?=\s)", f"gse_mux_{k}", text)
        out.append(verilog[start : mod.start()])
        out.append(text)
        start = mod.end()
    out.append(verilog[start:])
    return "".join(out)


def _port_ids_from_one(il):
    # Amaranth numbers ports from 0, Yosys from 1 (0 = "no position"): Yosys would
    # list a module's first port (e.g. `clk`) last. Keep Amaranth's order.
    return re.sub(
        r"^(\s*wire\b[^\n]*?\b(?:input|output|inout) )(\d+)(?=\s)",
        lambda mo: f"{mo.group(1)}{int(mo.group(2)) + 1}",
        il,
        flags=re.M,
    )


@dataclass
class KeptModule:
    """A submodule exported as its own module: ``path`` in the hierarchy, fixed
    ``module`` name, ``ports`` = ``[(name, value, PortDirection)]`` (``clk``, ``rst``
    first; values are the submodule's own signals) and its standalone ``rtlil``."""

    path: str
    module: str
    ports: list
    rtlil: str = ""
    memory: dict = None  # an SRAM's shape, ports and timing (SRAM.describe())
    cdc: dict = None  # a clock-domain crossing's kind and clocks (_cdc)

    def port_list(self):
        return [
            {
                "name": n,
                "direction": "input" if d == PortDirection.Input else "output",
                "width": 1 if v is None else len(v),
            }
            for n, v, d in self.ports
        ]


def kept_modules(component, keep_modules=None):
    """The :class:`KeptModule` list of ``component`` (elaborates it)."""
    fragment = Fragment.get(_Flat(component), None)
    return _cut_kept(fragment, _keep(fragment, keep_modules))


def _cut_kept(fragment, keep_modules):
    # Replace each kept submodule's fragment, in place, by an Instance of its fixed
    # module name wired to the submodule's own interface signals, and convert the
    # submodule on its own with those signals as its named ports. (Converted inside
    # its parent, a submodule's boundary nets are named after whatever signals alias
    # them: `port$598$0`, `wp__en`, ...)
    kept = []
    users = _users(fragment)  # once for the design, not once per kept module
    for path, module in keep_modules.items():
        parent, index = _find(fragment, ("core",) + tuple(path.split(".")), path)
        sub, sub_name, src_loc = parent.subfragments[index]
        obj = (sub.origins or (sub,))[0]
        ports = _interface(obj, sub)
        _check_no_leaks(users, sub, ports, path)
        cdc = _cdc(obj)
        clocks = cdc[1] if cdc else [("clk", "rst", "sync")]
        inst_ports = []
        for clk, rst, domain in clocks:
            inst_ports += [("i", clk, ClockSignal(domain)), ("i", rst, ResetSignal(domain))]
        for port_name, value, direction in ports:
            inst_ports.append(("i" if direction == PortDirection.Input else "o", port_name, value))
        parent.subfragments[index] = (Instance(module, *inst_ports), sub_name, src_loc)
        clock_ports = [(n, None, PortDirection.Input) for clk, rst, _d in clocks for n in (clk, rst)]
        k = KeptModule(
            path,
            module,
            clock_ports + ports,
            memory=_memory_description(obj, path),
            cdc=cdc[2] if cdc else None,
        )
        k.rtlil = _standalone_rtlil(sub, ports, module, clocks)
        kept.append(k)
    return kept


#: What a kept memory's manifest entry must state (``describe()`` of the memory).
MEMORY_KEYS = (
    "kind",
    "depth",
    "width",
    "write_ports",
    "read_ports",
    "read_latency_cycles",
    "read_enable",
    "read_during_write",
    "reset",
    "reset_less",
)


def _memory_description(obj, path):
    # An SRAM (rtl/lib/sram.py), or any other kept memory with a ``describe()`` (the
    # reorder buffer's SlotRAM): its shape, ports and timing for the manifest. A kept
    # module that is not a memory has none.
    if not _is_memory(obj):
        return None
    doc = obj.describe()
    missing = [k for k in MEMORY_KEYS if k not in doc]
    if missing:
        raise ValueError(f"keep_modules: memory {path!r} does not describe its {', '.join(missing)}")
    return doc


def _find(fragment, names, path):
    index = None
    parent = None
    for n in names:
        for i, (sub, sub_name, _src) in enumerate(fragment.subfragments):
            if sub_name == n:
                parent, index, fragment = fragment, i, sub
                break
        else:
            raise ValueError(f"keep_modules: no submodule {path!r}")
    return parent, index


def _interface(obj, fragment):
    """``[(name, value, direction)]`` of a kept submodule's interface."""
    if hasattr(obj, "signature") and isinstance(obj.signature, wiring.Signature):
        return [(n, v, d) for n, (v, d) in port_map(obj)[0].items()]
    # A plain Elaboratable: its public signals (one level of grouping objects
    # allowed), named as the designer named them; outputs are what it drives.
    driven = _driven(fragment)
    ports, names = [], set()
    for sig in _attr_signals(obj, depth=2):
        if sig.name in names:
            raise ValueError(f"keep_modules: {type(obj).__name__} has two ports named {sig.name!r}")
        names.add(sig.name)
        ports.append((sig.name, sig, PortDirection.Output if sig in driven else PortDirection.Input))
    if not ports:
        raise ValueError(f"keep_modules: {type(obj).__name__} has no interface signals")
    return ports


def _attr_signals(obj, depth):
    for attr, value in vars(obj).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if isinstance(value, Signal):
            yield value
        elif (
            depth > 1
            and hasattr(value, "__dict__")
            and not isinstance(value, type)
            and not isinstance(value, (Elaboratable, Fragment, Value))
        ):
            yield from _attr_signals(value, depth - 1)


def _fragments(fragment, skip=None):
    if fragment is skip:
        return
    yield fragment
    for sub, _name, _src in fragment.subfragments:
        yield from _fragments(sub, skip)


def _signals(values, side):
    # ClockSignal/ResetSignal are not lowered yet and cannot list their signals:
    # they are never interface signals of a memory, so they are left out.
    out = SignalSet()
    for v in values:
        try:
            out |= v._lhs_signals() if side == "lhs" else v._rhs_signals()
        except NotImplementedError:
            pass
    return out


def _driven(fragment):
    out = SignalSet()
    for f in _fragments(fragment):
        for stmts in f.statements.values():
            out |= _signals(stmts, "lhs")
        if isinstance(f, Instance):
            out |= _signals([v for v, kind in f.ports.values() if kind == "o"], "lhs")
        if isinstance(f, MemoryInstance):
            out |= _signals([port._data for port in f._read_ports], "lhs")
    return out


def _uses(f):
    # The signals one fragment (not its subfragments) reads or drives.
    out = SignalSet()
    for stmts in f.statements.values():
        out |= _signals(stmts, "lhs") | _signals(stmts, "rhs")
    if isinstance(f, Instance):
        out |= _signals([v for v, kind in f.ports.values() if kind != "io"], "rhs")
    if isinstance(f, MemoryInstance):
        out |= _signals(
            [v for port in (*f._read_ports, *f._write_ports) for v in (port._addr, port._data, port._en)],
            "rhs",
        )
    return out


def _users(top):
    """``{signal: [fragment, ...]}``: every fragment of ``top`` that uses each signal.
    Built once per design (walking the design once per kept module cost minutes on the
    default leaf, which keeps dozens of memories)."""
    users = SignalDict()
    for f in _fragments(top):
        for sig in _uses(f):
            users.setdefault(sig, []).append(f)
    return users


def _check_no_leaks(users, sub, ports, path):
    # The Instance replaces everything the kept submodule drives except its ports:
    # the rest of the design must not use any of its other signals.
    port_sigs = SignalSet()
    for _n, value, _d in ports:
        port_sigs |= Value.cast(value)._rhs_signals()
    inside = {id(f) for f in _fragments(sub)}
    # A domain's reset a crossing drives for its own local domains is not a net the
    # parent sees: the parent's domains come in through the clock and reset ports.
    leaked = [
        s
        for s in _driven(sub) - port_sigs
        if isinstance(s, Signal) and any(id(f) not in inside for f in users.get(s, ()))
    ]
    if leaked:
        names = ", ".join(sorted(s.name for s in leaked))
        raise ValueError(f"keep_modules: {path!r} is used through signals outside its interface: {names}")


def _standalone_rtlil(fragment, ports, module, clocks=(("clk", "rst", "sync"),)):
    wrap = _Flat(fragment, ports=ports)
    top = Fragment.get(wrap, None)
    il_ports = {}
    for clk, rst, domain in clocks:
        cd = ClockDomain(domain)
        cd.clk, cd.rst = Signal(name=clk), Signal(name=rst)
        top.add_domains(cd)
        il_ports[clk] = (cd.clk, PortDirection.Input)
        il_ports[rst] = (cd.rst, PortDirection.Input)
    il_ports.update(wrap.ports)
    il = _to_rtlil(top, il_ports, module)
    decl = f"module \\{module}"
    if not re.search(rf"^{re.escape(decl)}$", il, flags=re.M):
        raise AssertionError(f"no module {module} in its own RTLIL")
    return il.replace(decl + "\n", "attribute \\keep_hierarchy 1\n" + decl + "\n", 1)


class _NoZeroInitEmitter(rtlil.ModuleEmitter):
    # Amaranth's RTLIL back end writes a memory's initial contents as one ``$meminit_v2``
    # cell whose data it builds one Python object per bit: on the leaf's buffers (a few
    # Mbit at the default configuration) that was most of the export's Python time, and
    # Yosys then carried the words through every pass only for
    # :func:`_strip_memory_zero_init` to delete them from the Verilog. An all-zero
    # memory gets no ``$meminit_v2`` (Yosys writes no ``initial`` block for it: the same
    # Verilog); a memory with real contents (a ROM) keeps them.
    def emit_memory(self, cell_idx, cell):
        if any(cell.init):
            super().emit_memory(cell_idx, cell)


def _to_rtlil(fragment, ports, name):
    """RTLIL of ``fragment`` (no source locations), all-zero memories without contents."""
    saved = rtlil.ModuleEmitter
    rtlil.ModuleEmitter = _NoZeroInitEmitter  # what convert_fragment instantiates
    try:
        return rtlil.convert_fragment(fragment, ports, name, emit_src=False)[0]
    finally:
        rtlil.ModuleEmitter = saved


def _strip_memory_zero_init(verilog):
    # Amaranth zero-initialises every memory (FIFO storage, RAMs), and Yosys writes
    # that as one `initial` statement per word: nothing may rely on it (reset is
    # synchronous, SRAM macros have no initial contents), and on a 32K-word RAM it
    # makes synth_ecp5 take 25 times longer. Only all-zero initial blocks go; a
    # memory with real initial contents (a ROM) keeps them.
    zero_init = re.compile(r"  initial begin\n(    [^\n]*= \d+'(?:h0+|d0|b0+);\n)+  end\n")
    return zero_init.sub("", verilog)


class _Flat(Elaboratable):
    # Ports must be whole signals: give each brief-named port a signal of its own.
    # ``component`` is a wiring.Component (ports from port_map), or any elaboratable
    # or fragment with ``ports=[(name, value, direction)]``.
    def __init__(self, component, ports=None):
        self.component = component
        self.ports = {}
        self._links = []
        self._domains = []
        if ports is None:
            ports = [(n, v, d) for n, (v, d) in port_map(component)[0].items()]
            # A block with other clock domains (``clock_domains``): define them here,
            # ``clk``/``rst`` then ``<domain>_clk``/``<domain>_rst`` in that order, so
            # the ports do not come out in the order Amaranth happens to create them.
            extra = [
                d
                for d in getattr(component, "clock_domains", ())
                if f"{d}_clk" not in {n for n, _v, _d in ports}
            ]
            if extra:
                self._domains = [ClockDomain(d) for d in ("sync", *extra)]
                for cd in self._domains:
                    self.ports[cd.clk.name] = (cd.clk, PortDirection.Input)
                    self.ports[cd.rst.name] = (cd.rst, PortDirection.Input)
        for port_name, value, direction in ports:
            sig = Signal(len(value), name=port_name)
            self.ports[port_name] = (sig, direction)
            self._links.append((sig, value, direction))

    def elaborate(self, platform):
        m = Module()
        m.domains += self._domains
        m.submodules.core = self.component
        for sig, value, direction in self._links:
            if direction == PortDirection.Input:
                m.d.comb += value.eq(sig)
            else:
                m.d.comb += sig.eq(value)
        return m


def _escape(name):
    return name if name.replace("_", "").isalnum() else "\\" + name


def manifest(component, name, parameters, *, description="", keep_modules=None, kept=None):
    """The JSON-able manifest of an exported module (brief section 5).

    ``submodules`` lists each kept module: its fixed ``module`` name, its hierarchy
    ``path`` and its ``ports`` (name, direction, width), what an SRAM wrapper must
    provide. ``kept`` (from :func:`kept_modules`) saves elaborating again."""
    if kept is None:
        kept = kept_modules(component, keep_modules)
    ports, interfaces = port_map(component)
    port_list = [
        {"name": "clk", "direction": "input", "width": 1},
        {"name": "rst", "direction": "input", "width": 1},
    ]
    for port_name, (value, direction) in ports.items():
        port_list.append(
            {
                "name": port_name,
                "direction": "input" if direction == PortDirection.Input else "output",
                "width": len(value),
            }
        )
    # Other clock domains (``component.clock_domains``, e.g. a MAC's ``rx``/``tx``):
    # ``<domain>_clk``/``<domain>_rst`` ports, unless the clock is a member itself.
    clocks = [
        {"name": "clk", "reset": "rst", "reset_kind": "synchronous", "reset_active": "high", "domain": "sync"}
    ]
    clock_ports = []
    for domain in getattr(component, "clock_domains", ()):
        clk, rst = f"{domain}_clk", f"{domain}_rst"
        if clk in ports:
            clocks.append({"name": clk, "reset": None, "domain": domain})
            continue
        clock_ports += [
            {"name": clk, "direction": "input", "width": 1},
            {"name": rst, "direction": "input", "width": 1},
        ]
        clocks.append(
            {"name": clk, "reset": rst, "reset_kind": "synchronous", "reset_active": "high", "domain": domain}
        )
        interfaces.append(
            {"name": domain, "protocol": "clock", "role": "", "ports": {"clk": clk, "rst": rst}}
        )
    grouped = {p for i in interfaces for p in i["ports"].values()}
    signals = [p["name"] for p in port_list[2:] if p["name"] not in grouped]
    if signals:
        interfaces.append(
            {"name": "signals", "protocol": "signal", "role": "", "ports": {n: n for n in signals}}
        )
    return {
        "module": name,
        "description": description,
        "parameters": parameters,
        "clocks": clocks,
        "ports": port_list[:2] + clock_ports + port_list[2:],
        "interfaces": interfaces,
        "submodules": [
            {
                "module": k.module,
                "path": k.path,
                "ports": k.port_list(),
                **({"memory": k.memory} if k.memory else {}),
                **({"cdc": k.cdc} if k.cdc else {}),
            }
            for k in sorted(kept, key=lambda k: (k.module, k.path))
        ],
    }


def write_export(component, name, parameters, out_dir, *, description="", keep_modules=None):
    """Write ``out_dir/<name>.v``, ``out_dir/<name>.json`` (the manifest) and
    ``out_dir/<name>.vlt`` (Verilator lint waivers); return the first two paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    v_path = out_dir / f"{name}.v"
    j_path = out_dir / f"{name}.json"
    verilog, kept = _export(component, name, keep_modules)
    doc = manifest(component, name, parameters, description=description, kept=kept)
    # The lint waivers travel with the Verilog (each one is justified in the file).
    w_path = out_dir / f"{name}.vlt"
    doc["verilator_waivers"] = w_path.name
    _write_if_changed(w_path, waivers_for(name))
    _write_if_changed(v_path, verilog)
    _write_if_changed(j_path, json.dumps(doc, indent=2) + "\n")
    return v_path, j_path


def _write_if_changed(path, text):
    # Leaves mtimes alone when nothing changed, so cached simulator builds stay valid.
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
