"""Export an Amaranth component as Verilog an integrator can read, plus its manifest.

Port names follow the brief (section 5):

* a packet stream (:func:`~opengse.rtl.stream.AXIStreamSignature`) member ``s_axis``
  becomes ``s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser, s_axis_tvalid,
  s_axis_tready``;
* any other ``stream.Signature`` member ``m_hdr`` with a struct payload becomes
  ``m_hdr_valid, m_hdr_ready`` and one ``m_hdr_<field>`` per struct member;
* arrays of members get an index: ``s_axis_0_tdata``;
* plain signals keep their names (``stat_spoof``); nested signatures join with ``_``.

The design is flattened into one module named as asked, except submodules listed in
``keep_modules`` (e.g. memories an ASIC team replaces with compiled SRAMs), which stay
separate modules with the fixed names given. Initial values are stripped from the
Verilog: every register is set by the synchronous reset ``rst``.
"""
import json

from amaranth.back import rtlil
from amaranth.hdl import Elaboratable, Module, Signal, ValueCastable
from amaranth.hdl._ir import PortDirection
from amaranth.lib import data, stream, wiring
from amaranth._toolchain.yosys import find_yosys

from .stream import is_axis

__all__ = ["port_map", "export_verilog", "manifest"]


def _leaves(prefix, shape, value):
    """(name, value) for each leaf member of a (possibly nested) struct view."""
    if isinstance(shape, data.StructLayout):
        for field_name, field in shape:
            yield from _leaves(f"{prefix}_{field_name}", field.shape, value[field_name])
    else:
        if isinstance(value, ValueCastable):
            value = value.as_value()
        yield prefix, value


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
                inner_flipped = is_in    # In(sig) flips the signature for its members
                if isinstance(sig, stream.Signature):
                    _stream(item_name, sig, item, inner_flipped, out, interfaces)
                else:
                    _walk(item_name, sig, item, inner_flipped, out, interfaces)
            else:
                direction = PortDirection.Input if is_in else PortDirection.Output
                for leaf_name, value in _leaves(item_name, member.shape, item):
                    out[leaf_name] = (value, direction)


def _stream(name, sig, intf, flipped, out, interfaces):
    sink = flipped             # an In(stream) member: this block receives the stream
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
            out[f"{name}_t{field_name}"] = (v.as_value() if isinstance(v, ValueCastable) else v, fwd)
    else:
        for leaf_name, value in _leaves(name, shape, intf.payload):
            ports[leaf_name[len(name) + 1:]] = leaf_name
            out[leaf_name] = (value, fwd)
    out[f"{name}_{t}valid"] = (intf.valid, fwd)
    out[f"{name}_{t}ready"] = (intf.ready, bwd)
    ports[f"{t}valid"] = f"{name}_{t}valid"
    ports[f"{t}ready"] = f"{name}_{t}ready"
    interfaces.append({
        "name": name,
        "protocol": "axi4-stream" if axis else "valid-ready",
        "role": "slave" if sink else "master",
        "ports": ports,
    })


def port_map(component):
    """Ports with the brief's names: (``{name: (value, PortDirection)}``, interfaces)."""
    out, interfaces = {}, []
    _walk("", component.signature, component, False, out, interfaces)
    return out, interfaces


def export_verilog(component, name, *, keep_modules=None):
    """Verilog text of ``component`` as module ``name``.

    ``keep_modules`` maps the Amaranth hierarchy path of a submodule (e.g.
    ``"core.ram"``) to the fixed module name it keeps in the output."""
    keep_modules = dict(keep_modules or {})
    top = _Flat(component)
    il = rtlil.convert(top, name=name, ports=top.ports, emit_src=False)
    # The builtin Yosys has neither `setattr` nor `rename`: mark and rename the kept
    # modules in the RTLIL text (module declaration and the cells instantiating it).
    # A kept submodule must be an Elaboratable of its own (an amaranth.lib.memory.Memory
    # is inlined into its parent: wrap it).
    import re
    for path, fixed in keep_modules.items():
        rtl_name = re.escape("\\" + f"{name}.core.{path}")
        if not re.search(rf"^module {rtl_name}$", il, flags=re.M):
            raise ValueError(f"keep_modules: no submodule {path!r} in {name!r}")
        decl = "attribute \\keep_hierarchy 1\nmodule \\" + fixed
        il = re.sub(rf"^module {rtl_name}$", lambda _m: decl, il, flags=re.M)
        il = re.sub(rf"^(\s*cell) {rtl_name}(?=\s)", lambda mo: mo.group(1) + " \\" + fixed,
                    il, flags=re.M)
    script = [f"read_rtlil <<rtlil\n{il}\nrtlil", "proc", "memory_collect"]
    script.append(f"hierarchy -top {_escape(name)}")
    script.append("flatten")
    script += [
        "opt -purge",
        "attrmap -remove src -remove generator -remove top -remove amaranth.hierarchy"
        " -remove amaranth.decoding -remove keep_hierarchy -remove init",
        "attrmap -modattr -remove src -remove generator -remove top"
        " -remove amaranth.hierarchy -remove keep_hierarchy",
        "write_verilog -norename -noattr",
    ]
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    verilog = yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)
    return _strip_memory_zero_init(verilog)


def _strip_memory_zero_init(verilog):
    # Amaranth zero-initialises every memory (FIFO storage, RAMs), and Yosys writes
    # that as one `initial` statement per word: nothing may rely on it (reset is
    # synchronous, SRAM macros have no initial contents), and on a 32K-word RAM it
    # makes synth_ecp5 take 25 times longer. Only all-zero initial blocks go; a
    # memory with real initial contents (a ROM) keeps them.
    import re
    zero_init = re.compile(r"  initial begin\n(    [^\n]*= \d+'(?:h0+|d0|b0+);\n)+  end\n")
    return zero_init.sub("", verilog)


class _Flat(Elaboratable):
    # Ports must be whole signals: give each brief-named port a signal of its own.
    def __init__(self, component):
        self.component = component
        self.ports = {}
        self._links = []
        for port_name, (value, direction) in port_map(component)[0].items():
            sig = Signal(len(value), name=port_name)
            self.ports[port_name] = (sig, direction)
            self._links.append((sig, value, direction))

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self.component
        for sig, value, direction in self._links:
            if direction == PortDirection.Input:
                m.d.comb += value.eq(sig)
            else:
                m.d.comb += sig.eq(value)
        return m


def _escape(name):
    return name if name.replace("_", "").isalnum() else "\\" + name


def manifest(component, name, parameters, *, description="", keep_modules=None):
    """The JSON-able manifest of an exported module (brief section 5)."""
    ports, interfaces = port_map(component)
    port_list = [{"name": "clk", "direction": "input", "width": 1},
                 {"name": "rst", "direction": "input", "width": 1}]
    for port_name, (value, direction) in ports.items():
        port_list.append({
            "name": port_name,
            "direction": "input" if direction == PortDirection.Input else "output",
            "width": len(value),
        })
    grouped = {p for i in interfaces for p in i["ports"].values()}
    signals = [p["name"] for p in port_list[2:] if p["name"] not in grouped]
    if signals:
        interfaces.append({"name": "signals", "protocol": "signal", "role": "",
                           "ports": {n: n for n in signals}})
    return {
        "module": name,
        "description": description,
        "parameters": parameters,
        "clocks": [{"name": "clk", "reset": "rst", "reset_kind": "synchronous",
                    "reset_active": "high", "domain": "sync"}],
        "ports": port_list,
        "interfaces": interfaces,
        "submodules": sorted((keep_modules or {}).values()),
    }


def write_export(component, name, parameters, out_dir, *, description="", keep_modules=None):
    """Write ``out_dir/<name>.v`` and ``out_dir/<name>.json``; return both paths."""
    from pathlib import Path
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    v_path = out_dir / f"{name}.v"
    j_path = out_dir / f"{name}.json"
    verilog = export_verilog(component, name, keep_modules=keep_modules)
    doc = manifest(component, name, parameters, description=description,
                   keep_modules=keep_modules)
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
