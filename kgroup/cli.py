"""The ``kgroup`` command line (``kgroup ...`` or ``python -m kgroup ...``).

A thin layer over :class:`kgroup.admin.GroupAdmin`. Reference: ``docs/cli.md`` (in kgroup's
source distribution and repository).

Commands:

* ``kgroup describe GROUP [--json]``: state, protocol, members with their decoded assignments
  and subscriptions, committed offsets, log end offsets and lag.
* ``kgroup remove-members GROUP --instance-id ID [...] [--reason TEXT] [--json]``: KIP-345
  admin removal of static members (LeaveGroup v3+).

Every command takes ``--bootstrap-servers`` (or ``KGROUP_BOOTSTRAP_SERVERS``) and
``--timeout-ms`` (the whole command's deadline, default 30000). Exit codes: 0 success,
1 the cluster answered with an error (or did not answer in time), 2 usage error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import click

from kgroup._clock import MonotonicClock
from kgroup._retry import Deadline
from kgroup._version import __version__
from kgroup.admin import (
    GroupAdmin,
    GroupDescription,
    GroupNotFoundError,
    MemberDescription,
    MemberRemoval,
    PartitionLag,
)
from kgroup.errors import ConfigError, KGroupError
from kgroup.types import TopicPartition

__all__ = ["ENV_BOOTSTRAP", "AdminFactory", "AdminLike", "main"]

ENV_BOOTSTRAP = "KGROUP_BOOTSTRAP_SERVERS"
DEFAULT_TIMEOUT_MS = 30000


class AdminLike(Protocol):
    """What the CLI uses of :class:`~kgroup.admin.GroupAdmin` (tests inject a fake)."""

    def describe_group(self, group_id: str, timeout_ms: int | None = None) -> GroupDescription:
        """See :meth:`kgroup.admin.GroupAdmin.describe_group`."""
        ...

    def lag(
        self, group_id: str, description: GroupDescription | None = None, timeout_ms: int | None = None
    ) -> tuple[PartitionLag, ...]:
        """See :meth:`kgroup.admin.GroupAdmin.lag`."""
        ...

    def remove_members_by_instance_id(
        self, group_id: str, instance_ids: Sequence[str], reason: str | None = None, timeout_ms: int | None = None
    ) -> tuple[MemberRemoval, ...]:
        """See :meth:`kgroup.admin.GroupAdmin.remove_members_by_instance_id`."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


AdminFactory = Callable[[str, int], AdminLike]
"""``factory(bootstrap_servers, timeout_ms) -> admin``; pass ``obj={"admin_factory": f}`` to inject one."""


def _default_factory(bootstrap_servers: str, timeout_ms: int) -> AdminLike:
    return GroupAdmin.connect(bootstrap_servers, timeout_ms=timeout_ms)


def _remaining_ms(deadline: Deadline) -> int:
    """What is left of the whole command's deadline, for the next admin call."""
    remaining = deadline.remaining_ms()
    if remaining <= 0:
        raise click.ClickException("the command's deadline (--timeout-ms) passed")
    return remaining


def _describe_existing(admin: AdminLike, group: str, deadline: Deadline) -> GroupDescription:
    """DescribeGroups; a group the coordinator does not know (state Dead) is an error."""
    description = admin.describe_group(group, _remaining_ms(deadline))
    if description.state == "Dead":
        raise GroupNotFoundError(f"group {group!r} does not exist (the coordinator reports state Dead)",
                                 api="DescribeGroups")
    return description


def _connection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--timeout-ms",
        type=click.IntRange(min=1),
        default=DEFAULT_TIMEOUT_MS,
        show_default=True,
        help="Deadline of the whole command, in ms.",
    )(fn)
    fn = click.option(
        "--bootstrap-servers",
        "-b",
        envvar=ENV_BOOTSTRAP,
        show_envvar=True,
        help="host:port[,host:port...] of the cluster.",
    )(fn)
    return fn


def _open_admin(ctx: click.Context, bootstrap_servers: str | None, timeout_ms: int) -> AdminLike:
    if not bootstrap_servers or not bootstrap_servers.strip():
        raise click.UsageError(f"no bootstrap servers: pass --bootstrap-servers or set {ENV_BOOTSTRAP}", ctx)
    factory: AdminFactory = _default_factory
    if isinstance(ctx.obj, dict) and ctx.obj.get("admin_factory") is not None:
        factory = ctx.obj["admin_factory"]
    try:
        return factory(bootstrap_servers.strip(), timeout_ms)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), ctx, param_hint="--bootstrap-servers") from exc
    except KGroupError as exc:
        raise click.ClickException(str(exc)) from exc


# ------------------------------------------------------------------------------ rendering
def _tp_json(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


def _member_json(m: MemberDescription) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topics": None if m.subscribed_topics is None else list(m.subscribed_topics),
        "assignment": [_tp_json(tp) for tp in m.assignment],
        "decode_error": m.decode_error,
    }


def _lag_json(p: PartitionLag) -> dict[str, Any]:
    return {
        **_tp_json(p.topic_partition),
        "committed_offset": p.committed_offset,
        "log_end_offset": p.log_end_offset,
        "lag": p.lag,
        "metadata": p.metadata,
        "member_id": p.member_id,
        "group_instance_id": p.group_instance_id,
    }


def describe_json(description: GroupDescription, offsets: Sequence[PartitionLag]) -> dict[str, Any]:
    """The ``kgroup describe --json`` document (schema in ``docs/cli.md``)."""
    known = [p.lag for p in offsets if p.lag is not None]
    return {
        "group_id": description.group_id,
        "state": description.state,
        "protocol_type": description.protocol_type,
        "protocol": description.protocol,
        "generation_id": description.generation_id,
        "coordinator": {
            "node_id": description.coordinator.node_id,
            "host": description.coordinator.host,
            "port": description.coordinator.port,
        },
        "members": [_member_json(m) for m in description.members],
        "offsets": [_lag_json(p) for p in offsets],
        "total_lag": sum(known) if known else None,
    }


def _dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _partitions_text(partitions: Sequence[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return " ".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items())) or "-"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [list(headers), *rows]]
    return "\n".join(lines)


def describe_text(description: GroupDescription, offsets: Sequence[PartitionLag]) -> str:
    """The ``kgroup describe`` table (columns in ``docs/cli.md``)."""
    c = description.coordinator
    known = [p.lag for p in offsets if p.lag is not None]
    head = _table(
        ("", ""),
        [
            ("GROUP", description.group_id),
            ("COORDINATOR", f"{c.node_id} ({c.host}:{c.port})"),
            ("STATE", description.state),
            ("PROTOCOL-TYPE", _dash(description.protocol_type)),
            ("PROTOCOL", _dash(description.protocol)),
            ("GENERATION", _dash(description.generation_id)),
            ("MEMBERS", str(len(description.members))),
            ("TOTAL-LAG", _dash(sum(known) if known else None)),
        ],
    )
    head = "\n".join(line.strip() for line in head.splitlines()[1:])
    parts = [head]
    if description.members:
        member_rows = [
            [
                m.member_id,
                _dash(m.group_instance_id),
                _dash(m.client_id),
                _dash(m.client_host),
                "-" if m.subscribed_topics is None else (",".join(m.subscribed_topics) or "-"),
                _partitions_text(m.assignment) + (f"  [undecodable: {m.decode_error}]" if m.decode_error else ""),
            ]
            for m in description.members
        ]
        parts.append(
            _table(("MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "TOPICS", "ASSIGNMENT"), member_rows)
        )
    if offsets:
        offset_rows = [
            [
                p.topic_partition.topic,
                str(p.topic_partition.partition),
                _dash(p.committed_offset),
                _dash(p.log_end_offset),
                _dash(p.lag),
                _dash(p.member_id),
                _dash(p.group_instance_id),
            ]
            for p in offsets
        ]
        parts.append(
            _table(
                ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "GROUP-INSTANCE-ID"),
                offset_rows,
            )
        )
    return "\n\n".join(parts)


def _emit_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False))


# ------------------------------------------------------------------------------ commands
@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="kgroup")
def main() -> None:
    """Inspect and administer Kafka consumer groups (classic protocol).

    Exit codes: 0 success, 1 the cluster answered with an error or did not answer in time,
    2 usage error. Reference: docs/cli.md in kgroup's source distribution.
    """


@main.command()
@click.argument("group")
@_connection_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema in docs/cli.md).")
@click.pass_context
def describe(ctx: click.Context, group: str, bootstrap_servers: str | None, timeout_ms: int, as_json: bool) -> None:
    """Describe GROUP: state, members, assignments, committed offsets and lag.

    A group the coordinator does not know (state Dead) is an error (exit 1).
    """
    deadline = Deadline.after_ms(MonotonicClock(), timeout_ms)
    admin = _open_admin(ctx, bootstrap_servers, timeout_ms)
    try:
        description = _describe_existing(admin, group, deadline)
        offsets = admin.lag(group, description, _remaining_ms(deadline))
    except KGroupError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        admin.close()
    if as_json:
        _emit_json(describe_json(description, offsets))
    else:
        click.echo(describe_text(description, offsets))


@main.command("remove-members")
@click.argument("group")
@click.option(
    "--instance-id",
    "instance_ids",
    multiple=True,
    required=True,
    help="group_instance_id of a static member to remove (repeatable).",
)
@click.option("--reason", default=None, help="Reason sent with LeaveGroup v5+ (KIP-800).")
@_connection_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema in docs/cli.md).")
@click.pass_context
def remove_members(
    ctx: click.Context,
    group: str,
    instance_ids: tuple[str, ...],
    reason: str | None,
    bootstrap_servers: str | None,
    timeout_ms: int,
    as_json: bool,
) -> None:
    """Remove static members of GROUP by group_instance_id (KIP-345; LeaveGroup v3+).

    The group rebalances without them. Exits 1 if any member was not removed
    (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ...), the group does not exist, or the
    coordinator cannot do LeaveGroup v3+.
    """
    if any(not i.strip() for i in instance_ids):
        raise click.BadParameter("an instance id must not be empty", ctx, param_hint="--instance-id")
    deadline = Deadline.after_ms(MonotonicClock(), timeout_ms)
    admin = _open_admin(ctx, bootstrap_servers, timeout_ms)
    try:
        description = _describe_existing(admin, group, deadline)
        member_ids = {m.group_instance_id: m.member_id for m in description.members if m.group_instance_id}
        results = admin.remove_members_by_instance_id(group, instance_ids, reason, _remaining_ms(deadline))
    except KGroupError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        admin.close()
    rows = []
    for r in results:
        member_id = r.member_id or member_ids.get(r.group_instance_id, "")
        rows.append((r, member_id))
    failed = [r for r, _ in rows if r.error_code != 0]
    if as_json:
        _emit_json(
            {
                "group_id": group,
                "members": [
                    {
                        "group_instance_id": r.group_instance_id,
                        "member_id": member_id or None,
                        "error_code": r.error_code,
                        "error": r.error_name,
                    }
                    for r, member_id in rows
                ],
            }
        )
    else:
        click.echo(
            _table(
                ("GROUP-INSTANCE-ID", "MEMBER-ID", "RESULT"),
                [
                    [r.group_instance_id, _dash(member_id),
                     "removed" if r.error_code == 0 else f"{r.error_name} ({r.error_code})"]
                    for r, member_id in rows
                ],
            )
        )
    if failed:
        detail = ", ".join(f"{r.group_instance_id}: {r.error_name} ({r.error_code})" for r in failed)
        raise click.ClickException(f"{len(failed)} of {len(results)} members of group {group!r} not removed: {detail}")


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI as a program; return the exit code (for ``python -m kgroup``)."""
    try:
        main.main(args=list(argv) if argv is not None else None, prog_name="kgroup", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
