"""The invariants across nodes of spec/rules/replication.md (INV-REPL-*) as executable predicates.

``violations(deployment, before)`` returns one readable line per broken
invariant; ``before`` is :func:`offsets` of the state before the step (for
the invariants about steps). It reads the deployment's state but not how
steps change it, so it checks the model rather than restating it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xspec.models.invariants import violations as node_violations

if TYPE_CHECKING:
    from xspec.models.replication import Deployment

Offsets = dict[str, tuple[int, str, int, int, int]]  # node -> (node object, replid, offset, link object, its ack)


def offsets(deployment: Deployment) -> Offsets:
    """What INV-REPL-2 compares across a step."""
    out: Offsets = {}
    for name, node in deployment.nodes.items():
        link = deployment.links.get(name)
        out[name] = (id(node), node.replid, node.offset, id(link), -1 if link is None else link.ack)
    return out


def violations(deployment: Deployment, before: Offsets | None = None) -> list[str]:
    """Every invariant violation in ``deployment``, as text; [] if none."""
    from xspec.models.replication import _data
    out: list[str] = []
    for name, node in deployment.nodes.items():
        if node.up:
            out.extend(f"node {name}: {v}" for v in node_violations(node.server))
        if node.writes_executed:
            out.append(f"INV-REPL-3: read-only replica {name} executed {node.writes_executed} client writes")
        if before is not None and name in before:
            ident, replid, offset, link_ident, ack = before[name]
            if ident == id(node) and replid == node.replid and node.offset < offset:
                out.append(f"INV-REPL-2: node {name}'s offset went from {offset} to {node.offset}")
            link = deployment.links.get(name)
            if link is not None and id(link) == link_ident and ack > link.ack:
                out.append(f"INV-REPL-2: the acknowledged offset of {name} went from {ack} to {link.ack}")
    for name, node in deployment.nodes.items():
        if not node.up:
            continue
        f = node.failover
        if f is not None and f.state == "waiting-for-sync" and node.is_replica:
            out.append(f"INV-REPL-5: node {name} waits for a FAILOVER's sync but is a replica")
        if f is not None and f.state == "failover-in-progress" and (
                f.target is None or deployment.node_at(*f.target) is not deployment.primary_of(node)):
            out.append(f"INV-REPL-5: node {name}'s FAILOVER is in progress but it does not follow its target")
        if f is None and any(c.blocked is not None and type(c.blocked.payload).__name__ == "Postponed"
                             for c in node.server.clients.values()):
            out.append(f"INV-REPL-5: node {name} has a client postponed with no FAILOVER pausing writes")
    for link in deployment.links.values():
        primary, replica = deployment.nodes[link.primary], deployment.nodes[link.replica]
        if link.phase != "online" or not primary.up or not replica.up:
            continue
        if replica.replid == primary.replid and replica.offset > primary.offset:
            out.append(f"INV-REPL-4: replica {replica.name} at offset {replica.offset} is past its primary's "
                       f"{primary.offset}")
        master = replica.server.clients.get(-1)
        caught_up = not link.pending and replica.offset == primary.offset and (master is None or not master.in_multi)
        if caught_up and _data(replica.server) != _data(primary.server):
            out.append(f"INV-REPL-1: replica {replica.name} has applied all of {primary.name}'s stream but its "
                       "data differs")
    return out
