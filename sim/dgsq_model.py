"""Plain-Python reference models of DGSQ request/grant (brief section 4).

Independent of the RTL: only the protocol constants come from the header module.

* :class:`ArbiterModel` is the reference grant scheduler of one egress port: an ideal
  (one decision per call, no pipeline) version of the policy in docs/dgsq.md: strict
  priority across traffic classes, weighted round-robin rounds within a class, one
  container per grant while ``outstanding + grant <= room``, at most
  ``max_inflight`` containers in flight per requester, REQUEST demand corrected by
  the source's acknowledged GRANT seq, every grant a container in flight until its
  container arrives or the source reports it void (REQUEST ``voids``), leases for
  lost GRANTs.
* :class:`SourceModel` is the source side (DGSQ manager + VOQ buffer): per queue its
  packets, backlog, signed credit balance, REQUEST triggers (non-empty, growth by a
  container beyond the arbiter's view, refresh, a void GRANT), the acknowledged GRANT
  seq and the count of void GRANTs (GRANTs that brought no container). Credit
  is counted in whole credit units per packet (:func:`credit_bytes`), as the egress
  reports arrivals: backlog, releases and their reports are in rounded bytes.
* :func:`jain` is Jain's fairness index.
"""

from collections import deque

from opengse.rtl.header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES

from .voq_model import credit_bytes

__all__ = ["ArbiterModel", "SourceModel", "SourceQueue", "credit_bytes", "jain", "units"]

SEQ_MOD = 1 << 16
VOID_MOD = 1 << 8  # a REQUEST's void-GRANT count wraps (next_type bits 7:0)
DEBT_MAX = 511  # credit units of overrun debt kept per requester (clamped)


def units(nbytes):
    """Bytes to credit units (rounded up), saturating at 16 bits."""
    return min(0xFFFF, -(-nbytes // CREDIT_UNIT_BYTES))


def jain(xs):
    xs = list(xs)
    s = sum(xs)
    sq = sum(x * x for x in xs)
    return (s * s) / (len(xs) * sq) if sq else 1.0


class _Slot:
    def __init__(self, key, tc, tenant, seq, quota, voids=0):
        self.key = key
        self.tc = tc
        self.tenant = tenant
        self.demand = 0
        self.inflight = 0
        self.cleft = 0
        self.gseq = seq
        self.quota = quota
        self.voids = voids  # the source's void-GRANT count, as last reported
        self.idle_since = 0  # last progress (for leases)


class ArbiterModel:
    """Reference scheduler. Call :meth:`request`, :meth:`arrival`, :meth:`expire` as
    messages come, and :meth:`pick` once per decision; :meth:`check_grant` validates a
    grant some other scheduler made against this model's state."""

    def __init__(
        self,
        n_req=64,
        buffer_credits=1024,
        grant_credits=CONTAINER_BYTES // CREDIT_UNIT_BYTES,
        max_inflight=2,
        n_tenants=16,
    ):
        self.n_req = n_req
        self.buffer = buffer_credits
        self.G = grant_credits
        self.K = max_inflight
        self.n_tenants = n_tenants
        self.weights = [1] * n_tenants
        self.slots = {}  # key (src_node, dgsq) -> _Slot
        self.order = []  # slot index -> key or None (lowest free index first)
        self.order = [None] * n_req
        self.outstanding = 0
        self.ptr = {c: 0 for c in range(8)}
        self.stats = {"grants": 0, "req_no_slot": 0, "arr_unknown": 0, "lease_expired": 0}

    def set_weight(self, tenant_idx, weight):
        self.weights[tenant_idx % self.n_tenants] = max(1, weight)

    def weight(self, tenant):
        return self.weights[tenant % self.n_tenants]

    def index(self, key):
        return self.order.index(key) if key in self.slots else None

    def request(self, src_node, dgsq, tc, tenant, backlog, seq, now=0, voids=0):
        key = (src_node, dgsq)
        s = self.slots.get(key)
        if s is None:
            if backlog == 0:
                return
            if None not in self.order:
                self.stats["req_no_slot"] += 1
                return
            s = _Slot(key, tc, tenant, seq, self.weight(tenant), voids)
            s.idle_since = now
            self.slots[key] = s
            self.order[self.order.index(None)] = key
        # Void GRANTs reported since the last count (an older count: an overtaken
        # REQUEST) bring no container: no longer in flight.
        dv = (voids - s.voids) % VOID_MOD
        if 0 < dv < VOID_MOD // 2:
            s.inflight = max(0, s.inflight - dv)
            s.voids = voids
            s.idle_since = now
        unacked = (s.gseq - seq) % SEQ_MOD
        cl = min(s.cleft, s.inflight * self.G)  # credit of void grants is released
        if unacked > s.inflight:
            # Grants the source never saw and that are not in flight: lost GRANTs (a
            # lease wrote them off) or a new queue at the source. Resynchronise, forget
            # the debt.
            s.gseq = seq
            s.voids = voids
            cl = max(cl, 0)
            unacked = 0
        self.outstanding -= max(s.cleft, 0) - max(cl, 0)
        s.cleft = cl
        s.demand = max(0, backlog - unacked * self.G)
        s.tc, s.tenant = tc, tenant
        self._maybe_free(s)

    def arrival(self, src_node, dgsq, credits, last, now=0):
        s = self.slots.get((src_node, dgsq))
        if s is None:
            self.stats["arr_unknown"] += 1
            return 0
        # Signed credit: an overrun leaves debt the source repays from its next grant.
        cl = max(s.cleft - min(credits, DEBT_MAX), -DEBT_MAX)
        if last:
            s.inflight = max(0, s.inflight - 1)
            cl = min(cl, s.inflight * self.G)
        rel = max(s.cleft, 0) - max(cl, 0)
        # New debt (an overrun) used backlog the demand still counts.
        s.demand = max(0, s.demand - (max(-cl, 0) - max(-s.cleft, 0)))
        s.cleft = cl
        s.idle_since = now
        self.outstanding -= rel
        self._maybe_free(s)
        return rel

    def expire(self, key):
        s = self.slots[key]
        self.outstanding -= max(s.cleft, 0)
        s.cleft = 0
        s.inflight = 0
        self.stats["lease_expired"] += 1
        self._maybe_free(s)

    def expired(self, now, lease):
        return [k for k, s in self.slots.items() if s.inflight and now - s.idle_since >= lease]

    def _maybe_free(self, s):
        if s.demand == 0 and s.inflight == 0:
            del self.slots[s.key]
            self.order[self.order.index(s.key)] = None

    def eligible(self, s):
        return s.demand > 0 and s.inflight < self.K

    def top_class(self):
        classes = [s.tc for s in self.slots.values() if self.eligible(s)]
        return max(classes) if classes else None

    def can_grant(self, room):
        return self.outstanding + self.G <= min(room, self.buffer)

    def pick(self, room, now=0):
        """One decision: the granted key, or None."""
        top = self.top_class()
        if top is None or not self.can_grant(room):
            return None
        cands = [
            i
            for i, k in enumerate(self.order)
            if k is not None and self.slots[k].tc == top and self.eligible(self.slots[k])
        ]
        with_quota = [i for i in cands if self.slots[self.order[i]].quota > 0]
        if not with_quota:
            for k, s in self.slots.items():
                if s.tc == top:
                    s.quota = self.weight(s.tenant)
            with_quota = cands
        p = self.ptr[top]
        after = [i for i in with_quota if i >= p]
        i = after[0] if after else with_quota[0]
        self.ptr[top] = i + 1
        key = self.order[i]
        self.grant(key, now)
        return key

    def check_grant(self, key, room):
        """Problems with a grant to ``key`` made elsewhere (empty list: legal)."""
        s = self.slots.get(key)
        if s is None:
            return [f"grant to unknown requester {key}"]
        errs = []
        if s.demand <= 0:
            errs.append(f"grant to {key} with no backlog")
        if s.inflight >= self.K:
            errs.append(f"grant to {key} with {s.inflight} containers in flight")
        if self.outstanding + self.G > min(room, self.buffer):
            errs.append(f"grant beyond egress room: outstanding {self.outstanding} room {room}")
        return errs

    def grant(self, key, now=0):
        s = self.slots[key]
        repay = min(self.G, max(-s.cleft, 0))  # credit that repays overrun debt
        s.demand = max(0, s.demand - (self.G - repay))
        if s.inflight == 0:
            s.idle_since = now
        s.inflight += 1  # a container is expected until the source reports it void
        self.outstanding += max(s.cleft + self.G, 0) - max(s.cleft, 0)
        s.cleft += self.G
        s.gseq = (s.gseq + 1) % SEQ_MOD
        s.quota = max(0, s.quota - 1)
        self.stats["grants"] += 1
        return s.gseq


class SourceQueue:
    def __init__(self, qid, key):
        self.qid = qid
        self.key = key  # (dst_node, port, tc, tenant)
        self.packets = deque()  # byte lengths in the VOQ
        self.backlog = 0  # credit bytes queued (lengths rounded up to units)
        self.balance = 0
        self.view = 0
        self.ack = 0
        self.have_ack = 0
        self.ts_req = 0
        self.ts_grant = 0
        self.sent = 0  # credit bytes released in total
        self.rel_pending = False  # a release is out at the VOQ buffer
        self.pg = 0  # credit of GRANTs that came while it was out
        self.npg = 0  # those GRANTs (each brings a container or is void)
        self.voids = 0  # GRANTs that brought no container (REQUESTs report the count)
        self.gaps = 0


class SourceModel:
    """Source leaf: queues, REQUEST triggers, GRANT handling and container release.

    ``credit_unit`` (bytes): a packet uses its length rounded up to a multiple of it, in
    the backlog and in a release (the VOQ buffer's parameter of the same name; 64 in
    GSE, so that the source and the egress's per-packet arrival reports agree)."""

    def __init__(
        self, node_id=1, refresh=8192, container_bytes=CONTAINER_BYTES, credit_unit=CREDIT_UNIT_BYTES
    ):
        self.node_id = node_id
        self.credit_unit = credit_unit
        self.refresh = refresh
        self.CU = container_bytes // CREDIT_UNIT_BYTES
        self.queues = {}  # qid -> SourceQueue
        self.pending = set()

    def enqueue(self, qid, key, nbytes, now=0):
        q = self.queues.get(qid)
        if q is None:
            q = self.queues[qid] = SourceQueue(qid, key)
            q.ts_req = q.ts_grant = now
        was_empty = q.backlog == 0
        q.packets.append(nbytes)
        q.backlog += credit_bytes(nbytes, self.credit_unit)
        if was_empty or self.demand(qid) >= q.view + self.CU:
            self.pending.add(qid)

    def demand(self, qid):
        """What a REQUEST reports, in credit units: the backlog less the credit granted
        and not yet reported (the release out, GRANTs held for the next containers):
        that data is granted already, so it is no longer demand."""
        q = self.queues[qid]
        granted = max(q.balance + q.pg, 0)
        return units(max(q.backlog - granted, 0))

    def make_request(self, qid, now=0):
        """The REQUEST fields for queue ``qid`` (and the source's bookkeeping)."""
        q = self.queues[qid]
        self.pending.discard(qid)
        q.view = self.demand(qid)
        q.ts_req = now
        dst_node, port, tc, tenant = q.key
        return {
            "dst_node": dst_node,
            "port": port,
            "tc": tc,
            "tenant": tenant,
            "len": q.view,
            "seq": q.ack,
            "voids": q.voids % VOID_MOD,
            "dgsq": qid,
            "src_node": self.node_id,
        }

    def refresh_due(self, now):
        out = []
        for qid, q in self.queues.items():
            if (
                q.backlog
                and now - q.ts_req >= self.refresh
                and now - q.ts_grant >= self.refresh
                and qid not in self.pending
            ):
                self.pending.add(qid)
                out.append(qid)
        return out

    def grant(self, qid, seq, credit, now=0):
        """Apply a GRANT; returns the release request in bytes (0: none)."""
        q = self.queues[qid]
        if q.have_ack and seq != (q.ack + 1) % SEQ_MOD:
            q.gaps += 1
        if not q.have_ack or 0 < (seq - q.ack) % SEQ_MOD < SEQ_MOD // 2:
            q.ack = seq  # the last GRANT in seq order (an overtaken one leaves it)
        q.have_ack, q.ts_grant = 1, now
        q.view = max(0, q.view - credit)
        if q.rel_pending:
            # One GRANT, one container: its credit waits for the release that is out.
            q.pg += credit * CREDIT_UNIT_BYTES
            q.npg += 1
            return 0
        q.balance += credit * CREDIT_UNIT_BYTES
        if q.balance <= 0:  # it only repaid debt
            self._void(q, 1)
            return 0
        if q.backlog == 0:  # the queue ran dry
            q.balance = 0
            self._void(q, 1)
            return 0
        q.rel_pending = True
        return q.balance

    def _void(self, q, n):
        """``n`` GRANTs brought no container: a REQUEST reports them."""
        if n:
            q.voids += n
            self.pending.add(q.qid)

    def release(self, qid, credit):
        """The VOQ side: whole packets while the credit they use (lengths rounded up to
        units) is below ``credit`` bytes (the last may overrun). Returns the list of
        packet lengths sent; its report is :meth:`used` of that list."""
        q = self.queues[qid]
        out, total = [], 0
        while q.packets and total < credit:
            b = q.packets.popleft()
            out.append(b)
            total += credit_bytes(b, self.credit_unit)
        return out

    def used(self, pkts):
        """The credit a release of packets ``pkts`` (lengths) used: the VOQ's report."""
        return sum(credit_bytes(b, self.credit_unit) for b in pkts)

    def release_done(self, qid, sent_bytes):
        """Debit a release report (credit used, rounded bytes); returns a further release
        request in bytes (0: none)."""
        q = self.queues[qid]
        q.backlog -= sent_bytes
        q.sent += sent_bytes
        q.rel_pending = False
        if sent_bytes == 0:  # the release sent nothing: its GRANT was void
            self._void(q, 1)
        # The container is done: debt carries over, credit it left unused is dropped
        # (the arbiter releases it at the container's last packet), and the credit of
        # GRANTs that came meanwhile is the next container's.
        # One GRANT, one container: the next takes at most one container's credit, the
        # rest waits for the containers after it.
        left = min(q.balance - sent_bytes, 0) + q.pg
        q.balance = min(left, self.CU * CREDIT_UNIT_BYTES)
        q.pg = left - q.balance
        if q.balance > 0 and q.backlog:
            # The next container takes one waiting GRANT, or all of them when it takes
            # all the credit that is left (debt took the rest): those are void.
            q.rel_pending = True
            if q.pg:
                q.npg -= 1
            else:
                self._void(q, max(q.npg - 1, 0))
                q.npg = 0
            return q.balance
        if q.balance > 0:
            q.balance = q.pg = 0
        self._void(q, q.npg)  # no next container: every waiting GRANT is void
        q.npg = 0
        return 0
