"""Co-simulation of the VOQ buffer against its last single-``elaborate()`` version.

The reference is ``rtl/`` at commit :data:`GOLDEN_COMMIT` (the buffer before it was cut
into parts), taken with ``git archive`` into ``build/golden/`` and imported as a package
of its own, so nothing of today's tree leaks into it. Both buffers are built with the
same parameters and run side by side in Amaranth's simulator: every input they share is
driven from one signal, and every output they share is compared every clock (a
combinational mismatch flag, sampled each cycle); the first mismatch stops the run and
names the outputs that differ.

Inputs the new buffer has and the old one has not (``s_meta.bytes``, ``m_desc.ready``)
are driven too: ``s_meta.bytes`` with random values (the buffer ignores it) and
``m_desc.ready`` high (a consumer that always takes the descriptor; with it low the
buffer may hold a release back, which the old one cannot do). Outputs only the new
buffer has are not compared.

Stimulus, per clock, from one seeded ``random.Random``: packets of random length (1 B
to three cells, with short, cell-sized and cell + 1 lengths favoured) to random queues
and tenants (in phases of 1,500 clocks: 1, 2 or 8 queues, one tenant dominant or
none, few or many releases, so that the buffer fills and every admission limit binds),
random data, 6 % marked bad in ``tuser``, 2 % with ``tkeep == 0`` on the
last beat, random idle cycles, the side channel sometimes late; release requests with
random credit (0, 1, small, around a packet, up to the credit limit) to random queues;
random back-pressure on ``m_axis`` and ``m_deq_done`` in phases (ready with
probability 1.0, 0.8, 0.4 or 0.1, redrawn every 500 clocks); random query addresses;
and a reset at random times (about one per 12,000 clocks).

Command::

    python tests/voq/voq_cosim.py [--cycles 50000] [--config small|small64|default]
                                  [--seed 1] [--mutate NAME]

``--mutate`` runs against a deliberately changed copy of one part (see
:data:`MUTATIONS`), which must fail. tests/voq/test_voq_cosim.py runs both (slow).
"""

import argparse
import importlib
import io
import random
import subprocess
import sys
import tarfile
import time
import types
from pathlib import Path

from amaranth.hdl import Cat, Elaboratable, Module, ResetInserter, Signal, Value
from amaranth.lib import data
from amaranth.lib.wiring import In
from amaranth.sim import Simulator

#: The buffer as one ``elaborate()`` (main before the split into parts).
GOLDEN_COMMIT = "2713851"

CONFIGS = {
    # tests/voq/test_voq.py's SMALL: 64 cells of 64 B, 8 queues, 4 tenants.
    "small": dict(
        data_width=64,
        buffer_bytes=4096,
        cell_bytes=64,
        queues=8,
        tenants=4,
        queue_limit_cells=32,
        tenant_reserved_cells=4,
        tenant_limit_cells=40,
        alpha_log2=2,
        credit_width=16,
        credit_unit=1,
    ),
    "small64": dict(
        data_width=64,
        buffer_bytes=4096,
        cell_bytes=64,
        queues=8,
        tenants=4,
        queue_limit_cells=32,
        tenant_reserved_cells=4,
        tenant_limit_cells=40,
        alpha_log2=-1,
        credit_width=16,
        credit_unit=64,
    ),
    # The exported configuration (1024 queues, 256 cells of 256 B).
    "default": dict(
        data_width=64,
        buffer_bytes=65536,
        cell_bytes=256,
        queues=1024,
        tenants=16,
        queue_limit_cells=128,
        tenant_reserved_cells=8,
        tenant_limit_cells=192,
        alpha_log2=1,
        credit_width=16,
        credit_unit=64,
    ),
}

#: Deliberate changes the co-simulation must catch: (part module, text, replacement).
#: Each is small; two (the output FIFO, the FREE) are timing changes.
MUTATIONS = {
    # release credit: stop at used > credit instead of >= (one more packet at the edge)
    "walker_credit_edge": (
        "walker",
        "is_last & ((new_b >= w_credit) | w_c_lastpkt)",
        "is_last & ((new_b > w_credit) | w_c_lastpkt)",
    ),
    # a tenant's limit one cell larger than configured
    "admission_tenant_limit": ("admission", "s4_cap.eq(s3_ok >= L)", "s4_cap.eq(s3_ok > L)"),
    # the output FIFO used one entry short of full: timing only
    "emitter_fifo_depth": (
        "emitter",
        "(out_fifo.w_level + m1_v) < OUT_DEPTH",
        "(out_fifo.w_level + m1_v) < OUT_DEPTH - 1",
    ),
    # FREE takes 3 cycles instead of 2: timing only
    "accounting_free_slow": (
        "accounting",
        'rmo.eq(Const(R, signed(cnw + 2)) - occ[f.tenant])]\n                    m.next = "C3"',
        'rmo.eq(Const(R, signed(cnw + 2)) - occ[f.tenant])]\n                    m.next = "C2"',
    ),
    # a packet starts without waiting for its side channel
    "enqueue_meta": (
        "enqueue",
        "init_done & self.s_axis.valid & self.s_meta.valid",
        "init_done & self.s_axis.valid",
    ),
}


class CosimError(AssertionError):
    pass


# ---- the reference ---------------------------------------------------------------------


def _repo_root():
    here = Path(__file__).resolve().parent
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True)
    if out.returncode:
        raise FileNotFoundError(f"not in a git checkout ({here}): {out.stderr.strip()}")
    return Path(out.stdout.strip())


def golden_voq_buffer(build_root):
    """``VOQBuffer`` of :data:`GOLDEN_COMMIT`, imported from its own copy of ``rtl/``.

    Raises FileNotFoundError when the checkout lacks that commit (e.g. a shallow clone)."""
    pkg = f"gse_rtl_{GOLDEN_COMMIT}"
    if pkg not in sys.modules:
        root = _repo_root()
        dest = Path(build_root) / "golden" / GOLDEN_COMMIT
        if not (dest / pkg / "voq" / "buffer.py").exists():
            out = subprocess.run(
                ["git", "archive", "--format=tar", f"--prefix={pkg}/", f"{GOLDEN_COMMIT}:rtl"],
                cwd=root,
                capture_output=True,
            )
            if out.returncode:
                raise FileNotFoundError(
                    f"git archive {GOLDEN_COMMIT}:rtl failed (a shallow "
                    f"clone?): {out.stderr.decode().strip()}"
                )
            dest.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
                tar.extractall(dest, filter="data")
        sys.path.insert(0, str(dest))
    return importlib.import_module(f"{pkg}.voq.buffer").VOQBuffer


# ---- mutants ---------------------------------------------------------------------------


def _mutant_module(part, old, new):
    name = f"opengse.rtl.voq.{part}"
    src = Path(importlib.import_module(name).__file__).read_text()
    if src.count(old) != 1:
        raise ValueError(f"mutation text occurs {src.count(old)} times in {name}, not once")
    mod = types.ModuleType(f"{name}_mutant")
    mod.__package__ = "opengse.rtl.voq"
    exec(compile(src.replace(old, new), f"<mutant of {name}>", "exec"), mod.__dict__)
    return mod


def mutant_voq_buffer(mutation):
    """A ``VOQBuffer`` subclass with one part replaced by a mutated copy."""
    from opengse.rtl.voq.buffer import VOQBuffer

    part, old, new = MUTATIONS[mutation]
    mod = _mutant_module(part, old, new)
    if part == "admission":  # a part of the enqueue
        enq = types.ModuleType("opengse.rtl.voq.enqueue_mutant")
        enq.__package__ = "opengse.rtl.voq"
        src = Path(importlib.import_module("opengse.rtl.voq.enqueue").__file__).read_text()
        exec(compile(src, "<enqueue with mutant admission>", "exec"), enq.__dict__)
        enq.VOQAdmission = mod.VOQAdmission
        return type("MutantVOQBuffer", (VOQBuffer,), {"Enqueue": enq.VOQEnqueue})
    attr = {"accounting": "Accounting", "enqueue": "Enqueue", "walker": "Walker", "emitter": "Emitter"}[part]
    cls = getattr(mod, f"VOQ{attr}")
    return type("MutantVOQBuffer", (VOQBuffer,), {attr: cls})


# ---- the side-by-side top ----------------------------------------------------------------


def _leaves(component):
    """``{(path..., field...): (flow, value)}`` of every port leaf (struct fields split)."""
    out = {}

    def walk(path, flow, value):
        if isinstance(value, data.View) and isinstance(value.shape(), data.StructLayout):
            for name, _field in value.shape():
                walk(path + (name,), flow, getattr(value, name))
        else:
            out[path] = (flow, Value.cast(value))

    for path, member, value in component.signature.flatten(component):
        walk(tuple(path), member.flow, value)
    return out


class SideBySide(Elaboratable):
    """Old and new buffer on shared inputs; ``diff``: one bit per shared output, set
    while the two differ."""

    def __init__(self, old, new):
        self.old, self.new = old, new
        self.rst = Signal()
        lo, ln = _leaves(old), _leaves(new)
        self.inputs = {
            p: Signal(len(v), name="in_" + "_".join(p)) for p, (flow, v) in ln.items() if flow == In
        }
        self.only_new_inputs = sorted(p for p in self.inputs if p not in lo)
        self.outputs = [
            (p, lo[p][1], v) for p, (flow, v) in ln.items() if flow != In and p in lo and lo[p][0] != In
        ]
        self.only_new_outputs = sorted(p for p, (flow, _v) in ln.items() if flow != In and p not in lo)
        self._lo, self._ln = lo, ln
        self.diff = Signal(len(self.outputs))
        # (as signals: the simulator samples a signal much faster than an expression)
        self.old_values = Signal(sum(len(o) for _p, o, _n in self.outputs))
        self.new_values = Signal(sum(len(n) for _p, _o, n in self.outputs))
        self.drops = Signal(32 * 5)

    def explain(self, diff, olds, news):
        """The outputs that differ, from sampled ``diff``, ``old_values``, ``new_values``."""
        out, lo, ln = [], 0, 0
        for i, (p, o, n) in enumerate(self.outputs):
            vo, vn = olds >> lo & ((1 << len(o)) - 1), news >> ln & ((1 << len(n)) - 1)
            lo, ln = lo + len(o), ln + len(n)
            if diff >> i & 1:
                out.append(f"{'.'.join(p)}: old {vo} new {vn}")
        return "; ".join(out)

    def elaborate(self, platform):
        m = Module()
        m.submodules.old = ResetInserter(self.rst)(self.old)
        m.submodules.new = ResetInserter(self.rst)(self.new)
        for p, sig in self.inputs.items():
            m.d.comb += self._ln[p][1].eq(sig)
            if p in self._lo:
                m.d.comb += self._lo[p][1].eq(sig)
        m.d.comb += [
            self.diff.eq(Cat(o != n for _p, o, n in self.outputs)),
            self.old_values.eq(Cat(o for _p, o, _n in self.outputs)),
            self.new_values.eq(Cat(n for _p, _o, n in self.outputs)),
            self.drops.eq(
                Cat(getattr(self.new, f"stat_drop_{r}") for r in ("bad", "full", "queue", "tenant", "dt"))
            ),
        ]
        return m


# ---- stimulus ----------------------------------------------------------------------------


def credit_limit(dut):
    """The largest credit a request may carry (all of ``credit_width`` before the limit)."""
    return getattr(dut, "max_credit", (1 << dut.credit_width) - 1)


def run(params, cycles=50000, seed=1, new_cls=None, golden_cls=None, build_root="build", log=print):
    """Co-simulate; return a dict of activity counts. Raises :class:`CosimError` at the
    first clock where a shared output differs."""
    from opengse.rtl.voq.buffer import DROP_REASONS, VOQBuffer

    golden_cls = golden_cls or golden_voq_buffer(build_root)
    new = (new_cls or VOQBuffer)(**params)
    old = golden_cls(**params)
    top = SideBySide(old, new)
    rng = random.Random(seed)
    bpb, cell = new.bpb, params["cell_bytes"]
    cmax = credit_limit(new)
    I = top.inputs
    stats = {
        "cycles": 0,
        "pkts_in": 0,
        "beats_out": 0,
        "pkts_out": 0,
        "releases": 0,
        "resets": 0,
        "requests": 0,
        **{f"drop_{r}": 0 for r in DROP_REASONS},
    }

    drop_counts = top.drops

    def count_drops(value):
        for i, r in enumerate(DROP_REASONS):
            stats[f"drop_{r}"] += value >> (32 * i) & 0xFFFFFFFF

    phase = {}

    def packet():
        r = rng.random()
        if r < 0.25:
            n = rng.randint(1, 2 * bpb)
        elif r < 0.45:
            n = rng.choice([cell - 1, cell, cell + 1, 2 * cell, 3 * cell])
        else:
            n = rng.randint(1, 3 * cell)
        bad = rng.random() < 0.06
        zero_keep = rng.random() < 0.02
        beats = []
        for off in range(0, n, bpb):
            k = min(bpb, n - off)
            last = off + bpb >= n
            keep = (0 if zero_keep else (1 << k) - 1) if last else (1 << bpb) - 1
            beats.append((rng.getrandbits(8 * bpb), keep, int(last), int(bad and last)))
        q = rng.choice(phase["queues"])
        t = phase["tenant"] if rng.random() < phase["p_tenant"] else rng.randrange(params["tenants"])
        return q, t, beats

    def credit():
        r = rng.random()
        if r < 0.05:
            return 0
        if r < 0.1:
            return 1
        if r < 0.5:
            return rng.randint(1, 2 * cell)
        if r < 0.9:
            return rng.randint(1, 8 * cell)
        return rng.randint(0, cmax)

    def setin(ctx, path, value):
        ctx.set(I[path], value)

    async def bench(ctx):
        cur, bi, meta_late = None, 0, 0
        deq = None
        p_out = p_done = 1.0
        next_reset = rng.randint(2000, 24000)
        for p in top.only_new_inputs:
            if p == ("m_desc", "ready"):
                setin(ctx, p, 1)
        for cycle in range(cycles):
            if cycle % 500 == 0:
                p_out = rng.choice([1.0, 0.8, 0.4, 0.1])
                p_done = rng.choice([1.0, 0.8, 0.4])
            if cycle % 1500 == 0:
                # traffic phase: a few queues or many, one tenant dominant or none, the
                # buffer filling (few releases) or draining
                nq = min(params["queues"], rng.choice([1, 2, 8]))
                phase["queues"] = rng.sample(range(params["queues"]), nq)
                phase["tenant"] = rng.randrange(params["tenants"])
                phase["p_tenant"] = rng.choice([0.0, 0.8, 1.0])
                phase["p_deq"] = rng.choice([0.02, 0.1, 0.3])
            in_reset = next_reset <= cycle < next_reset + 3
            ctx.set(top.rst, in_reset)
            if in_reset:
                cur, deq = None, None
                if cycle == next_reset + 2:
                    stats["resets"] += 1
                    next_reset = cycle + rng.randint(4000, 20000)
            # ---- packets in ----
            if cur is None and rng.random() < 0.9:
                cur, bi = packet(), 0
                meta_late = rng.randint(1, 4) if rng.random() < 0.1 else 0
            if cur is not None and rng.random() < 0.85:
                q, t, beats = cur
                d, k, last, user = beats[bi]
                setin(ctx, ("s_axis", "payload", "data"), d)
                setin(ctx, ("s_axis", "payload", "keep"), k)
                setin(ctx, ("s_axis", "payload", "last"), last)
                setin(ctx, ("s_axis", "payload", "user"), user)
                setin(ctx, ("s_axis", "valid"), 1)
                meta_v = bi == 0 and meta_late == 0 or (bi > 0 and rng.random() < 0.2)
                if meta_late:
                    meta_late -= 1
                setin(ctx, ("s_meta", "valid"), int(meta_v))
                setin(ctx, ("s_meta", "payload", "queue"), q if bi == 0 else rng.randrange(params["queues"]))
                setin(ctx, ("s_meta", "payload", "tenant"), t)
                if ("s_meta", "payload", "bytes") in I:
                    setin(ctx, ("s_meta", "payload", "bytes"), rng.getrandbits(16))
                a_valid = True
            else:
                setin(ctx, ("s_axis", "valid"), 0)
                setin(ctx, ("s_meta", "valid"), int(rng.random() < 0.1))
                a_valid = False
            # ---- releases ----
            if deq is None and rng.random() < phase["p_deq"]:
                q = rng.choice(phase["queues"]) if rng.random() < 0.8 else rng.randrange(params["queues"])
                deq = (q, credit())
            setin(ctx, ("s_deq", "valid"), int(deq is not None))
            if deq is not None:
                setin(ctx, ("s_deq", "payload", "queue"), deq[0])
                setin(ctx, ("s_deq", "payload", "credit"), deq[1])
            ready_out = rng.random() < p_out
            setin(ctx, ("m_axis", "ready"), int(ready_out))
            setin(ctx, ("m_deq_done", "ready"), int(rng.random() < p_done))
            setin(ctx, ("query_queue",), rng.randrange(params["queues"]))
            setin(ctx, ("query_tenant",), rng.randrange(params["tenants"]))
            (
                _c,
                _r,
                diff,
                a_rdy,
                d_rdy,
                o_v,
                o_last,
                done_v,
                done_r,
                olds,
                news,
                drops,
            ) = await ctx.tick().sample(
                top.diff,
                new.s_axis.ready,
                new.s_deq.ready,
                new.m_axis.valid,
                new.m_axis.payload.last,
                new.m_deq_done.valid,
                new.m_deq_done.ready,
                top.old_values,
                top.new_values,
                drop_counts,
            )
            stats["cycles"] = cycle + 1
            if diff:
                raise CosimError(f"cycle {cycle}: outputs differ: " + top.explain(diff, olds, news))
            if cycle == next_reset:
                count_drops(drops)  # the counters restart at the reset
            if in_reset:
                continue
            if a_valid and a_rdy:
                bi += 1
                if bi == len(cur[2]):
                    cur = None
                    stats["pkts_in"] += 1
            if deq is not None and d_rdy:
                deq = None
                stats["requests"] += 1
            if o_v and ready_out:
                stats["beats_out"] += 1
                stats["pkts_out"] += o_last
            if done_v and done_r:
                stats["releases"] += 1
        count_drops(drops)

    sim = Simulator(top)
    sim.add_clock(1e-8)
    finished = []

    async def process(ctx):
        try:
            await bench(ctx)
        finally:
            finished.append(True)

    async def keeper(ctx):
        # Inputs are set by a process (no settling after each set: much faster than a
        # testbench); this testbench only keeps the simulation running until it ends.
        while not finished:
            await ctx.tick()

    sim.add_process(process)
    sim.add_testbench(keeper)
    t0 = time.time()
    sim.run()
    stats["seconds"] = round(time.time() - t0, 1)
    stats["compared_outputs"] = len(top.outputs)
    stats["only_new_outputs"] = [".".join(p) for p in top.only_new_outputs]
    return stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cycles", type=int, default=50000)
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutate", choices=sorted(MUTATIONS))
    ap.add_argument("--build-root", default="build")
    a = ap.parse_args(argv)
    new_cls = mutant_voq_buffer(a.mutate) if a.mutate else None
    try:
        stats = run(CONFIGS[a.config], a.cycles, a.seed, new_cls=new_cls, build_root=a.build_root)
    except CosimError as e:
        print(f"MISMATCH ({a.config}, seed {a.seed}{', mutant ' + a.mutate if a.mutate else ''}): {e}")
        return 1
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"identical for {stats['cycles']} clocks ({a.config}, seed {a.seed}): {stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
