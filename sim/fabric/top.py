"""FabricTop: an L x S leaf-spine fabric, every host a traffic generator and a checker.

::

    gen[n] -> host_up[n] -> leaf[l].s_axis_host[p]      leaf[l].m_axis_host[p] -> host_dn[n] -> chk[n]
    leaf[l].m_axis_fab[u] -> loss_up[l][u] -> fab_up[l][u] -> spine[u].s_axis[l]
    spine[u].m_axis[l] -> loss_dn[u][l] -> fab_dn[u][l] -> leaf[l].s_axis_fab[u]

Host ``n`` is host port ``p`` of leaf ``l``, ``n = l*H + p`` (the fabric spec's node
numbering); uplink ``u`` of every leaf goes to spine ``u`` (U = S), spine port ``l`` to
leaf ``l``. Every link is a :class:`~opengse.rtl.tb.link.FabricLink` of ``delay``
clocks that carries the receiver's ``pause`` back to the sender: a leaf's
``host_pause[p]`` reaches generator n's ``pause``, a spine's ``pause[l]`` the leaf's
``fab_pause_in[u]``, a leaf's ``fab_pause[u]`` the spine's ``pause_in[l]``. Checkers
never pause. Every fabric link (both directions) has a :class:`~.control_loss.ControlLoss`
in front of it (threshold 0 after reset: no loss).

Leaves and spines are :class:`~.blackbox.BlackBox` instances of one exported module
each (``gse_leaf``, ``gse_spine``), so Verilator compiles a leaf once
(``black_box=False`` elaborates them in place instead). Everything the top does not
connect - the leaves' configuration (``node_base``, destination table, tenant, class,
``link_up``), the spines' route tables, the generators' configuration, the links'
``fail``, the loss thresholds, and every counter - goes through the
:class:`~.harness.Harness`: ``cfg_valid/cfg_addr/cfg_data`` in, ``o_<unit>_<member>``
out, listed by :meth:`FabricTop.address_map`.

``hosts="stream"`` replaces the generators and checkers by the top's own ports, for
``gse sim`` (:mod:`.sim_command`): host n's ingress is ``s_host<n>`` (an AXI4-Stream
into ``host_up<n>``, always ready like the link; the sender must start a frame only
while ``host<n>_pause`` is 0, as a generator does) and its egress ``m_host<n>`` (out
of ``host_dn<n>``; the receiver must take every beat, as a checker does).

Units are named ``leaf<l>``, ``spine<s>``, ``gen<n>``, ``chk<n>``, ``host_up<n>``,
``host_dn<n>``, ``fab_up<l>_<u>``, ``fab_dn<u>_<l>``, ``loss_up<l>_<u>``,
``loss_dn<u>_<l>``.
"""

from dataclasses import dataclass

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.config import GSEConfig
from opengse.rtl.header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES
from opengse.rtl.tb.link import FabricLink

from opengse.rtl.lib.stream import AXIStreamSignature

from .blackbox import BlackBox
from .control_loss import ControlLoss
from .harness import Harness

__all__ = ["FabricShape", "FabricTop", "default_parts", "HOST_MODES"]

#: What sits at the host ports: RTL traffic generators and checkers, or top-level streams.
HOST_MODES = ("gen", "stream")


@dataclass(frozen=True)
class FabricShape:
    """L leaves, S spines (= uplinks per leaf), H host ports per leaf, link delay,
    datapath width, and the leaves' container (= grant) size in bytes (GSE mode)."""

    leaves: int = 4
    spines: int = 4
    hosts: int = 4
    delay: int = 100
    data_width: int = 64
    container_bytes: int = CONTAINER_BYTES

    def __post_init__(self):
        if not 2 <= self.leaves <= 8:
            raise ValueError(f"leaves must be 2..8 (spine ports), not {self.leaves}")
        if not 2 <= self.spines <= 16:
            raise ValueError(f"spines must be 2..16 (leaf uplinks), not {self.spines}")
        if not 1 <= self.hosts <= 16:
            raise ValueError(f"hosts per leaf must be 1..16, not {self.hosts}")
        if self.leaves * self.hosts > 256:
            raise ValueError("at most 256 hosts (host n's MAC ends in one byte n)")
        c = self.container_bytes
        if not (CREDIT_UNIT_BYTES <= c <= 65536 and c & (c - 1) == 0):
            raise ValueError(f"container bytes must be a power of two, 64..65536, not {c}")

    @property
    def n_hosts(self):
        return self.leaves * self.hosts

    @property
    def nodes(self):
        """Nodes the tables address: the host count rounded up to a power of two."""
        n = 2
        while n < self.n_hosts:
            n *= 2
        return n

    def leaf_config(self):
        return GSEConfig(
            data_width=self.data_width,
            host_ports=self.hosts,
            uplinks=self.spines,
            nodes=self.nodes,
            container_bytes=self.container_bytes,
        )

    def as_dict(self):
        return {
            "L": self.leaves,
            "S": self.spines,
            "H": self.hosts,
            "delay": self.delay,
            "w": self.data_width,
            # only when not the default: the shapes (and builds) of older records stay
            **({"container": self.container_bytes} if self.container_bytes != CONTAINER_BYTES else {}),
        }


def _leaf(shape, lb):
    from opengse.rtl.tops.leaf import GSELeaf

    # configuration and counters as ports (the harness reaches them), not the AXI4-Lite
    # bank: no bus transaction per counter sample
    return GSELeaf(shape.leaf_config(), lb=lb, delay=shape.delay, config_ports=True)


def _spine(shape, lb):
    from opengse.rtl.tops.spine import GSESpine

    return GSESpine(
        ports=shape.leaves,
        data_width=shape.data_width,
        nodes=shape.nodes,
        delay=shape.delay,
        config_ports=True,
    )


def _gen(shape, lb):
    from opengse.rtl.tb.traffic_gen import TrafficGenerator

    from .traffic import GEN_FLOWS

    return TrafficGenerator(data_width=shape.data_width, max_flows=GEN_FLOWS)


def _chk(shape, lb):
    from opengse.rtl.tb.traffic_check import TrafficChecker

    from .traffic import CHECKER_PARAMS, GEN_FLOWS

    return TrafficChecker(data_width=shape.data_width, sources=shape.nodes, flows=GEN_FLOWS, **CHECKER_PARAMS)


def default_parts():
    """``{part: factory(shape, lb)}`` of the real blocks (imported when called)."""
    return {"leaf": _leaf, "spine": _spine, "gen": _gen, "chk": _chk}


class FabricTop(wiring.Component):
    """The fabric of ``shape`` in mode ``lb`` ("gse" | "ecmp"); see the module doc.

    ``hosts`` is ``"gen"`` (generators and checkers) or ``"stream"`` (top-level host
    streams ``s_host<n>`` / ``m_host<n>`` / ``host<n>_pause``, see the module doc).
    ``parts`` overrides :func:`default_parts` (tests substitute small blocks).
    ``black_boxes`` maps each black-boxed module name to the component to export under
    it."""

    def __init__(self, shape=FabricShape(), lb="gse", *, parts=None, black_box=True, hosts="gen"):
        if hosts not in HOST_MODES:
            raise ValueError(f"hosts must be one of {HOST_MODES}, not {hosts!r}")
        self.shape, self.lb, self.hosts = shape, lb, hosts
        parts = {**default_parts(), **(parts or {})}
        L, S, _H, N = shape.leaves, shape.spines, shape.hosts, shape.n_hosts
        w, delay = shape.data_width, shape.delay
        self.black_boxes = {}

        def unit(kind, module):
            if not black_box:
                return parts[kind](shape, lb)
            if module not in self.black_boxes:  # one component exported per module
                self.black_boxes[module] = parts[kind](shape, lb)
            return BlackBox(self.black_boxes[module], module)

        self.leaves = [unit("leaf", "gse_leaf") for _ in range(L)]
        self.spines = [unit("spine", "gse_spine") for _ in range(S)]
        streams = hosts == "stream"
        if streams and w != 64:
            raise ValueError(f"host streams are 64-bit (the C++ main's beats), not {w}")
        self.gens = [] if streams else [parts["gen"](shape, lb) for _ in range(N)]
        self.chks = [] if streams else [parts["chk"](shape, lb) for _ in range(N)]
        self.host_up = [FabricLink(w, delay=delay) for _ in range(N)]
        self.host_dn = [FabricLink(w, delay=delay) for _ in range(N)]
        self.fab_up = [[FabricLink(w, delay=delay) for _ in range(S)] for _ in range(L)]
        self.fab_dn = [[FabricLink(w, delay=delay) for _ in range(L)] for _ in range(S)]
        self.loss_up = [[ControlLoss(w, seed=1 + l * S + u) for u in range(S)] for l in range(L)]
        self.loss_dn = [[ControlLoss(w, seed=1001 + u * L + l) for l in range(L)] for u in range(S)]

        link = {"s_axis", "m_axis", "pause_in", "pause_out"}
        units = []
        for l, leaf in enumerate(self.leaves):
            handled = {"s_axis_host", "host_pause", "m_axis_host", "host_pause_in"}
            handled |= {"s_axis_fab", "fab_pause", "m_axis_fab", "fab_pause_in"}
            units.append((f"leaf{l}", leaf, handled))
        for s, spine in enumerate(self.spines):
            units.append((f"spine{s}", spine, {"s_axis", "m_axis", "pause", "pause_in"}))
        for n in range(N):
            if not streams:
                units += [
                    (f"gen{n}", self.gens[n], {"m_axis", "pause"}),
                    (f"chk{n}", self.chks[n], {"s_axis"}),
                ]
            units += [(f"host_up{n}", self.host_up[n], link), (f"host_dn{n}", self.host_dn[n], link)]
        for l in range(L):
            for u in range(S):
                units += [
                    (f"fab_up{l}_{u}", self.fab_up[l][u], link),
                    (f"fab_dn{u}_{l}", self.fab_dn[u][l], link),
                    (f"loss_up{l}_{u}", self.loss_up[l][u], {"s_axis", "m_axis"}),
                    (f"loss_dn{u}_{l}", self.loss_dn[u][l], {"s_axis", "m_axis"}),
                ]
        self.harness = Harness(units)
        members = self.harness.members()
        if streams:
            for n in range(N):
                members[f"s_host{n}"] = In(AXIStreamSignature(w))
                members[f"m_host{n}"] = Out(AXIStreamSignature(w))
                members[f"host{n}_pause"] = Out(1)
        super().__init__(members)

    def address_map(self):
        out = {**self.harness.address_map(), "shape": self.shape.as_dict(), "lb": self.lb}
        if self.hosts == "stream":
            out["host_streams"] = self.shape.n_hosts
        return out

    def elaborate(self, platform):
        m = Module()
        L, S, H = self.shape.leaves, self.shape.spines, self.shape.hosts
        for l, leaf in enumerate(self.leaves):
            m.submodules[f"leaf{l}"] = leaf
        for s, spine in enumerate(self.spines):
            m.submodules[f"spine{s}"] = spine
        for n in range(self.shape.n_hosts):
            l, p = divmod(n, H)
            leaf, up, dn = self.leaves[l], self.host_up[n], self.host_dn[n]
            if self.hosts == "stream":
                for name, sub in (("host_up", up), ("host_dn", dn)):
                    m.submodules[f"{name}{n}"] = sub
                wiring.connect(m, wiring.flipped(getattr(self, f"s_host{n}")), up.s_axis)
                wiring.connect(m, up.m_axis, leaf.s_axis_host[p])
                m.d.comb += [
                    up.pause_in.eq(leaf.host_pause[p]),
                    getattr(self, f"host{n}_pause").eq(up.pause_out),
                ]
                wiring.connect(m, leaf.m_axis_host[p], dn.s_axis)
                wiring.connect(m, dn.m_axis, wiring.flipped(getattr(self, f"m_host{n}")))
            else:
                gen, chk = self.gens[n], self.chks[n]
                for name, sub in (("gen", gen), ("chk", chk), ("host_up", up), ("host_dn", dn)):
                    m.submodules[f"{name}{n}"] = sub
                wiring.connect(m, gen.m_axis, up.s_axis)
                wiring.connect(m, up.m_axis, leaf.s_axis_host[p])
                m.d.comb += [up.pause_in.eq(leaf.host_pause[p]), gen.pause.eq(up.pause_out)]
                wiring.connect(m, leaf.m_axis_host[p], dn.s_axis)
                wiring.connect(m, dn.m_axis, chk.s_axis)
            m.d.comb += [dn.pause_in.eq(0), leaf.host_pause_in[p].eq(dn.pause_out)]
        for l in range(L):
            leaf = self.leaves[l]
            for u in range(S):
                spine, up, dn = self.spines[u], self.fab_up[l][u], self.fab_dn[u][l]
                lu, ld = self.loss_up[l][u], self.loss_dn[u][l]
                for name, sub in (("fab_up", up), ("loss_up", lu)):
                    m.submodules[f"{name}{l}_{u}"] = sub
                for name, sub in (("fab_dn", dn), ("loss_dn", ld)):
                    m.submodules[f"{name}{u}_{l}"] = sub
                wiring.connect(m, leaf.m_axis_fab[u], lu.s_axis)
                wiring.connect(m, lu.m_axis, up.s_axis)
                wiring.connect(m, up.m_axis, spine.s_axis[l])
                wiring.connect(m, spine.m_axis[l], ld.s_axis)
                wiring.connect(m, ld.m_axis, dn.s_axis)
                wiring.connect(m, dn.m_axis, leaf.s_axis_fab[u])
                m.d.comb += [up.pause_in.eq(_pause_out(spine, l)), leaf.fab_pause_in[u].eq(up.pause_out)]
                m.d.comb += dn.pause_in.eq(leaf.fab_pause[u])
                if "pause_in" in spine.signature.members:
                    m.d.comb += spine.pause_in[l].eq(dn.pause_out)
        self.harness.elaborate(m, self)
        return m


def _pause_out(spine, port):
    """A spine port's pause request (0 for a spine without pause outputs)."""
    if "pause" in spine.signature.members:
        return spine.pause[port]
    return 0
