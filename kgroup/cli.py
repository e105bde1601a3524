"""The ``kgroup`` command line (``kgroup ...`` or ``python -m kgroup ...``).

A thin layer over :class:`kgroup.admin.GroupAdmin`. Reference: ``docs/cli.md`` (in kgroup's
source distribution and repository).

Commands:

* ``kgroup list [--state S,...] [--json]``: every consumer group and share group, with its type
  ("classic", "consumer", "share"), state and protocol type (ListGroups).
* ``kgroup describe GROUP [--json]``: state, protocol, members with their decoded assignments
  and subscriptions, committed offsets, log end offsets and lag; for a group of the consumer
  group protocol (KIP-848, ConsumerGroupDescribe) also the group and assignment epochs and each
  member's epoch and target assignment; for a share group (KIP-932, ShareGroupDescribe) the
  epochs, each member's epoch, rack and assignment, and per partition the share-partition start
  offset (DescribeShareGroupOffsets) in place of a committed offset.
* ``kgroup reset-offsets GROUP (--topic T[:P,P...] ... | --all-topics) (--to-earliest |
  --to-latest | --to-datetime ISO8601 | --to-offset N | --shift-by N) [--execute] [--json]``:
  plan (and with ``--execute`` commit) new offsets for an inactive group, as Kafka's
  ``kafka-consumer-groups.sh --reset-offsets``; a share group's start offsets
  (AlterShareGroupOffsets, as ``kafka-share-groups.sh --reset-offsets``), once it is Empty.
* ``kgroup delete GROUP [GROUP...] [--json]``: delete groups without members (DeleteGroups),
  share groups too.
* ``kgroup delete-offsets GROUP --topic T [...] [--json]``: delete a share group's start offsets
  of whole topics (DeleteShareGroupOffsets, KIP-932), once it is Empty.
* ``kgroup remove-members GROUP --instance-id ID [...] [--reason TEXT] [--json]``: KIP-345
  admin removal of static members (LeaveGroup v3+).
* ``kgroup configs GROUP [--set NAME=VALUE ...] [--delete NAME ...] [--validate-only] [--json]``:
  the group's configs (KIP-848, KIP-932; DescribeConfigs), or set and delete some
  (IncrementalAlterConfigs), as ``kafka-configs.sh --entity-type groups``.

Every command takes ``--bootstrap-servers`` (or ``KGROUP_BOOTSTRAP_SERVERS``) and
``--timeout-ms`` (the whole command's deadline, default 30000). Exit codes: 0 success,
1 the cluster answered with an error (or did not answer in time), 2 usage error.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import attrs
import click

from kgroup._clock import MonotonicClock
from kgroup._error_codes import GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, UNKNOWN_MEMBER_ID, error_name
from kgroup._retry import Deadline
from kgroup._version import __version__
from kgroup.admin import (
    GroupAdmin,
    GroupConfigEntry,
    GroupDeletion,
    GroupDescription,
    GroupListing,
    GroupNotFoundError,
    MemberDescription,
    MemberRemoval,
    OffsetResetPlan,
    PartitionLag,
    ResetTarget,
)
from kgroup.errors import ConfigError, KGroupError
from kgroup.types import OffsetAndMetadata, TopicPartition

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

    def list_groups(self, timeout_ms: int | None = None) -> tuple[GroupListing, ...]:
        """See :meth:`kgroup.admin.GroupAdmin.list_groups`."""
        ...

    def delete_groups(self, group_ids: Iterable[str], timeout_ms: int | None = None) -> tuple[GroupDeletion, ...]:
        """See :meth:`kgroup.admin.GroupAdmin.delete_groups`."""
        ...

    def plan_offset_reset(
        self,
        group_id: str,
        target: ResetTarget,
        topics: Iterable[str | TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> OffsetResetPlan:
        """See :meth:`kgroup.admin.GroupAdmin.plan_offset_reset`."""
        ...

    def alter_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """See :meth:`kgroup.admin.GroupAdmin.alter_offsets`."""
        ...

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """See :meth:`kgroup.admin.GroupAdmin.alter_share_group_offsets`."""
        ...

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], timeout_ms: int | None = None
    ) -> dict[str, int]:
        """See :meth:`kgroup.admin.GroupAdmin.delete_share_group_offsets`."""
        ...

    def describe_group_configs(self, group_id: str, timeout_ms: int | None = None) -> dict[str, GroupConfigEntry]:
        """See :meth:`kgroup.admin.GroupAdmin.describe_group_configs`."""
        ...

    def alter_group_configs(
        self,
        group_id: str,
        set: Mapping[str, str | int] = ...,  # the operation's name, as in kafka-configs.sh
        delete: Iterable[str] = (),
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """See :meth:`kgroup.admin.GroupAdmin.alter_group_configs`."""
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


@attrs.frozen
class _Call:
    """One command's invocation: its click context, the connection options and ``--json``."""

    ctx: click.Context
    bootstrap_servers: str | None
    timeout_ms: int
    as_json: bool

    @contextlib.contextmanager
    def admin(self) -> Iterator[tuple[AdminLike, Deadline]]:
        """The command's admin and its deadline: the admin closed at the end, its errors as exit 1."""
        deadline = Deadline.after_ms(MonotonicClock(), self.timeout_ms)
        admin = _open_admin(self.ctx, self.bootstrap_servers, self.timeout_ms)
        try:
            yield admin, deadline
        except KGroupError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            admin.close()


def _command_options(fn: Callable[..., None]) -> Callable[..., None]:
    """What every command takes: the connection options and ``--json``, given to it as one ``_Call``."""

    @functools.wraps(fn)
    def command(ctx: click.Context, /, bootstrap_servers: str | None, timeout_ms: int, as_json: bool,
                **params: Any) -> None:
        fn(_Call(ctx, bootstrap_servers, timeout_ms, as_json), **params)

    wrapped = click.pass_context(command)
    wrapped = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document (schema in docs/cli.md)."
    )(wrapped)
    return _connection_options(wrapped)


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
        "member_epoch": m.member_epoch,
        "target_assignment": None if m.target_assignment is None else [_tp_json(tp) for tp in m.target_assignment],
        "member_protocol": m.member_protocol,
        "rack_id": m.rack_id,
        "subscribed_topic_regex": m.subscribed_topic_regex,
    }


def _lag_json(p: PartitionLag) -> dict[str, Any]:
    """Every field of ``p`` (its partition as ``topic`` and ``partition``), and ``committed_beyond_log_end``."""
    fields = attrs.asdict(p, recurse=False)
    return {**_tp_json(fields.pop("topic_partition")), **fields, "committed_beyond_log_end": p.committed_beyond_log_end}


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
        "group_type": description.group_type,
        "group_epoch": description.group_epoch,
        "assignment_epoch": description.assignment_epoch,
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
    consumer_group = description.group_type == "consumer"
    share_group = description.group_type == "share"
    rows: list[tuple[str, str]] = [
        ("GROUP", description.group_id),
        ("COORDINATOR", f"{c.node_id} ({c.host}:{c.port})"),
        ("STATE", description.state),
    ]
    if consumer_group or share_group:
        rows += [
            ("GROUP-TYPE", description.group_type),
            ("ASSIGNOR", _dash(description.protocol)),
            ("GROUP-EPOCH", _dash(description.group_epoch)),
            ("ASSIGNMENT-EPOCH", _dash(description.assignment_epoch)),
        ]
    else:
        rows += [
            ("PROTOCOL-TYPE", _dash(description.protocol_type)),
            ("PROTOCOL", _dash(description.protocol)),
            ("GENERATION", _dash(description.generation_id)),
        ]
    rows += [("MEMBERS", str(len(description.members))), ("TOTAL-LAG", _dash(sum(known) if known else None))]
    head = _table(("", ""), rows)
    head = "\n".join(line.strip() for line in head.splitlines()[1:])
    parts = [head]
    if description.members and share_group:
        parts.append(_table(
            ("MEMBER-ID", "CLIENT-ID", "HOST", "RACK", "EPOCH", "TOPICS", "ASSIGNMENT"),
            [
                [m.member_id, _dash(m.client_id), _dash(m.client_host), _dash(m.rack_id), _dash(m.member_epoch),
                 ",".join(m.subscribed_topics or ()) or "-", _partitions_text(m.assignment)]
                for m in description.members
            ],
        ))
    elif description.members and consumer_group:
        parts.append(_table(
            ("MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "PROTOCOL", "TOPICS", "ASSIGNMENT",
             "TARGET-ASSIGNMENT"),
            [
                [
                    m.member_id,
                    _dash(m.group_instance_id),
                    _dash(m.client_id),
                    _dash(m.client_host),
                    _dash(m.member_epoch),
                    _dash(m.member_protocol),
                    m.subscribed_topic_regex or ",".join(m.subscribed_topics or ()) or "-",
                    _partitions_text(m.assignment),
                    _partitions_text(m.target_assignment or ()),
                ]
                for m in description.members
            ],
        ))
    elif description.members:
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
    if offsets and share_group:
        parts.append(_table(
            ("TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-IDS"),
            [
                [p.topic_partition.topic, str(p.topic_partition.partition), _dash(p.committed_offset),
                 _dash(p.log_end_offset), _dash(p.lag), _dash(p.member_id)]
                for p in offsets
            ],
        ))
    elif offsets:
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
    beyond = [p for p in offsets if p.committed_beyond_log_end]
    if beyond:
        parts.append("\n".join(_beyond_note(p) for p in beyond))
    return "\n\n".join(parts)


def _beyond_note(p: PartitionLag) -> str:
    return (
        f"NOTE: {p.topic_partition}: the committed offset {p.committed_offset} is past the log end offset "
        f"{p.log_end_offset} (the log was truncated, or the topic deleted and recreated): a consumer resuming "
        "there gets OFFSET_OUT_OF_RANGE and resets by its auto.offset.reset"
    )


def _emit_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False))


# ------------------------------------------------------------------------------ commands
@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="kgroup")
def main() -> None:
    """Inspect and administer Kafka consumer groups (classic and consumer protocols) and share groups.

    Exit codes: 0 success, 1 the cluster answered with an error or did not answer in time,
    2 usage error. Reference: docs/cli.md in kgroup's source distribution.
    """


@main.command()
@click.argument("group")
@_command_options
def describe(call: _Call, group: str) -> None:
    """Describe GROUP: state, members, assignments, committed offsets and lag.

    A group the coordinator does not know (state Dead) is an error (exit 1).
    """
    with call.admin() as (admin, deadline):
        description = _describe_existing(admin, group, deadline)
        offsets = admin.lag(group, description, _remaining_ms(deadline))
    if call.as_json:
        _emit_json(describe_json(description, offsets))
    else:
        click.echo(describe_text(description, offsets))


#: Kafka's group states (``ConsumerGroupState``), for ``list --state``
_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")


def listing_json(groups: Sequence[GroupListing]) -> dict[str, Any]:
    """The ``kgroup list --json`` document (schema in ``docs/cli.md``)."""
    return {
        "groups": [
            {"group_id": g.group_id, "group_type": g.group_type, "state": g.state, "protocol_type": g.protocol_type}
            for g in groups
        ]
    }


@main.command("list")
@click.option(
    "--state",
    "states",
    metavar="STATE[,STATE...]",
    default=None,
    help=f"Only groups in these states ({', '.join(_STATES)}; any case).",
)
@_command_options
def list_(call: _Call, states: str | None) -> None:
    """List the consumer and share groups: type, state and protocol type (ListGroups at every broker).

    Groups of protocol type "consumer" or "" (offsets committed without membership), and share
    groups (TYPE "share", KIP-932); not Kafka Connect's. TYPE and STATE are "-" where the broker
    does not say (ListGroups before v5, v4).
    """
    wanted: set[str] | None = None
    if states is not None:
        wanted = {state.strip().lower() for state in states.split(",") if state.strip()}
        invalid = sorted(wanted - {state.lower() for state in _STATES})
        if not wanted or invalid:
            raise click.BadParameter(
                f"invalid state list {states!r}; valid states are: {', '.join(_STATES)}", call.ctx, param_hint="--state"
            )
    with call.admin() as (admin, deadline):
        groups = admin.list_groups(_remaining_ms(deadline))
    if wanted is not None:
        groups = tuple(g for g in groups if (g.state or "").lower() in wanted)
    if call.as_json:
        _emit_json(listing_json(groups))
    else:
        click.echo(
            _table(
                ("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"),
                [[g.group_id, _dash(g.group_type), _dash(g.state), _dash(g.protocol_type)] for g in groups],
            )
        )


def _parse_topic(ctx: click.Context, text: str) -> list[str | TopicPartition]:
    """``TOPIC`` (every partition) or ``TOPIC:P,P,...``, as ``kafka-consumer-groups.sh --topic``."""
    topic, colon, numbers = text.strip().partition(":")
    if not topic:
        raise click.BadParameter(f"invalid topic {text!r}: expected TOPIC or TOPIC:P,P,...", ctx, param_hint="--topic")
    if not colon:
        return [topic]
    try:
        partitions = [int(n) for n in numbers.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"invalid partition in {text!r}: expected TOPIC:P,P,... with partition numbers", ctx, param_hint="--topic"
        ) from None
    if any(n < 0 for n in partitions):
        raise click.BadParameter(f"invalid partition in {text!r}: negative", ctx, param_hint="--topic")
    return [TopicPartition(topic, n) for n in partitions]


def parse_datetime_ms(text: str) -> int:
    """``--to-datetime``: an ISO 8601 date and time, in ms since the epoch.

    ``2024-05-01T12:00:00.000`` (local time, as Kafka's tool reads it without a zone),
    ``2024-05-01T10:00:00Z``, ``2024-05-01T12:00:00+02:00``; ``ValueError`` otherwise.
    """
    raw = text.strip()
    if raw[-1:] in ("Z", "z"):
        raw = raw[:-1] + "+00:00"
    moment = datetime.datetime.fromisoformat(raw)
    if "T" not in raw.upper():
        raise ValueError("a date and a time are needed (YYYY-MM-DDTHH:mm:SS[.sss][zone])")
    if moment.tzinfo is None:
        moment = moment.astimezone()  # the local time zone
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (moment - epoch) // datetime.timedelta(milliseconds=1)


def reset_json(plan: OffsetResetPlan, results: Mapping[TopicPartition, int] | None) -> dict[str, Any]:
    """The ``kgroup reset-offsets --json`` document (schema in ``docs/cli.md``)."""
    rows = []
    for p in plan.partitions:
        code = None if results is None else results.get(p.topic_partition)
        rows.append(
            {
                **_tp_json(p.topic_partition),
                "current_offset": p.current_offset,
                "new_offset": p.new_offset,
                "note": p.note or None,
                "error_code": code,
                "error": None if not code else error_name(code),
            }
        )
    return {
        "group_id": plan.group_id,
        "state": plan.state,
        "group_type": plan.group_type,
        "executed": results is not None,
        "target": {"kind": plan.target.kind, "value": plan.target.value},
        "offsets": rows,
    }


def reset_text(plan: OffsetResetPlan, results: Mapping[TopicPartition, int] | None) -> str:
    """The ``kgroup reset-offsets`` table: Kafka's columns (GROUP, TOPIC, PARTITION, NEW-OFFSET) first."""
    headers = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET"]
    if results is not None:
        headers.append("RESULT")
    headers.append("NOTE")
    rows = []
    for p in plan.partitions:
        row = [plan.group_id, p.topic_partition.topic, str(p.topic_partition.partition), str(p.new_offset),
               _dash(p.current_offset)]
        if results is not None:
            code = results.get(p.topic_partition, 0)
            row.append("committed" if code == 0 else f"{error_name(code)} ({code})")
        row.append(p.note)
        rows.append(row)
    return _table(headers, rows)


@main.command("reset-offsets")
@click.argument("group")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC[:P,P...]",
    help="A topic (every partition) or some of its partitions (repeatable).",
)
@click.option("--all-topics", is_flag=True, help="Every partition the group has committed offsets for.")
@click.option("--to-earliest", is_flag=True, help="To the log start offset.")
@click.option("--to-latest", is_flag=True, help="To the log end offset.")
@click.option(
    "--to-datetime",
    metavar="ISO8601",
    default=None,
    help="To the first offset at or after this time: 2024-05-01T12:00:00.000 (local time), or with Z or "
    "+hh:mm; the log end offset where no record is that late.",
)
@click.option("--to-offset", type=int, metavar="N", default=None, help="To offset N (clamped to the log).")
@click.option(
    "--shift-by", type=int, metavar="N", default=None, help="The committed offset plus N, negative: back (clamped)."
)
@click.option("--execute", is_flag=True, help="Commit the new offsets (without it: print the plan only).")
@click.option("--dry-run", is_flag=True, help="Print the plan only (the default).")
@_command_options
def reset_offsets(
    call: _Call,
    group: str,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    to_offset: int | None,
    shift_by: int | None,
    execute: bool,
    dry_run: bool,
) -> None:
    """Reset the committed offsets of GROUP, as Kafka's kafka-consumer-groups.sh --reset-offsets.

    A dry run unless --execute: prints the new offsets and commits nothing. The group must be
    inactive (Empty, or Dead: not known yet), as Kafka's tool requires; a group with members
    is refused (exit 1). --to-offset and --shift-by are clamped to the log start and end offsets.
    A share group's start offsets are set with AlterShareGroupOffsets (kafka-share-groups.sh).
    """
    chosen = [
        name
        for name, given in (
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--to-datetime", to_datetime is not None),
            ("--to-offset", to_offset is not None),
            ("--shift-by", shift_by is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "choose exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by"
            + (f" (given: {', '.join(chosen)})" if chosen else ""),
            call.ctx,
        )
    if bool(topics) == all_topics:
        raise click.UsageError("name the partitions to reset: --topic (repeatable) or --all-topics", call.ctx)
    if execute and dry_run:
        raise click.UsageError("--execute and --dry-run exclude each other", call.ctx)
    if to_earliest:
        target = ResetTarget.earliest()
    elif to_latest:
        target = ResetTarget.latest()
    elif to_datetime is not None:
        try:
            target = ResetTarget.timestamp(parse_datetime_ms(to_datetime))
        except ValueError as exc:
            raise click.BadParameter(f"{to_datetime!r}: {exc}", call.ctx, param_hint="--to-datetime") from exc
    elif to_offset is not None:
        target = ResetTarget.offset(to_offset)
    else:
        assert shift_by is not None
        target = ResetTarget.shift_by(shift_by)
    scope: list[str | TopicPartition] | None = None
    if topics:
        scope = [item for text in topics for item in _parse_topic(call.ctx, text)]
    with call.admin() as (admin, deadline):
        plan = admin.plan_offset_reset(group, target, scope, _remaining_ms(deadline))
        results = None
        if execute and plan.group_type == "share":
            starts = {tp: om.offset for tp, om in plan.offsets().items()}
            results = admin.alter_share_group_offsets(group, starts, _remaining_ms(deadline))
        elif execute:
            results = admin.alter_offsets(group, plan.offsets(), _remaining_ms(deadline))
    if call.as_json:
        _emit_json(reset_json(plan, results))
    else:
        click.echo(reset_text(plan, results))
        if results is None:
            click.echo("Dry run: nothing committed. Add --execute to commit these offsets.", err=True)
    failed = {tp: code for tp, code in (results or {}).items() if code != 0}
    if failed:
        detail = ", ".join(f"{tp}: {error_name(code)} ({code})" for tp, code in failed.items())
        hint = ""
        if any(code == UNKNOWN_MEMBER_ID for code in failed.values()):
            hint = " (the group has members again: its offsets can only be reset while it is inactive)"
        raise click.ClickException(
            f"offsets of {len(failed)} of {len(results or {})} partitions of group {group!r} not committed: "
            f"{detail}{hint}"
        )


_DELETE_ERRORS = {
    NON_EMPTY_GROUP: "the group has members: stop its consumers first",
    GROUP_ID_NOT_FOUND: "the group does not exist",
}


def _deletion_text(d: GroupDeletion) -> str:
    if d.error_code == 0:
        return "deleted"
    why = _DELETE_ERRORS.get(d.error_code)
    return f"{d.error_name} ({d.error_code})" + (f": {why}" if why else "")


@main.command()
@click.argument("groups", nargs=-1, required=True, metavar="GROUP [GROUP...]")
@_command_options
def delete(call: _Call, groups: tuple[str, ...]) -> None:
    """Delete each GROUP and its committed offsets (DeleteGroups).

    Kafka deletes only a group without members: NON_EMPTY_GROUP (68) otherwise, GROUP_ID_NOT_FOUND
    (69) for a group it does not know. Exits 1 if any group was not deleted.
    """
    if any(not g.strip() for g in groups):
        raise click.BadParameter("a group id must not be empty", call.ctx, param_hint="GROUP")
    with call.admin() as (admin, deadline):
        results = admin.delete_groups(groups, _remaining_ms(deadline))
    if call.as_json:
        _emit_json(
            {
                "groups": [
                    {"group_id": d.group_id, "error_code": d.error_code, "error": d.error_name} for d in results
                ]
            }
        )
    else:
        click.echo(_table(("GROUP", "RESULT"), [[d.group_id, _deletion_text(d)] for d in results]))
    failed = [d for d in results if d.error_code != 0]
    if failed:
        detail = "; ".join(f"{d.group_id}: {_deletion_text(d)}" for d in failed)
        raise click.ClickException(f"{len(failed)} of {len(results)} groups not deleted: {detail}")


@main.command("delete-offsets")
@click.argument("group")
@click.option("--topic", "topics", multiple=True, required=True, metavar="TOPIC",
              help="A topic whose start offsets to delete (repeatable).")
@_command_options
def delete_offsets(call: _Call, group: str, topics: tuple[str, ...]) -> None:
    """Delete the start offsets of a share group GROUP for whole topics (DeleteShareGroupOffsets, KIP-932).

    As kafka-share-groups.sh --delete-offsets: the group must be Empty (NON_EMPTY_GROUP
    otherwise, exit 1). Share groups only. Exits 1 if any topic's offsets were not deleted.
    """
    if any(not t.strip() for t in topics):
        raise click.BadParameter("a topic name must not be empty", call.ctx, param_hint="--topic")
    with call.admin() as (admin, deadline):
        description = _describe_existing(admin, group, deadline)
        if description.group_type != "share":
            raise click.ClickException(
                f"group {group!r} is a {description.group_type} group: delete-offsets deletes a share group's "
                "start offsets only"
            )
        results = admin.delete_share_group_offsets(group, topics, _remaining_ms(deadline))
    if call.as_json:
        _emit_json({
            "group_id": group,
            "topics": [
                {"topic": t, "error_code": code, "error": None if code == 0 else error_name(code)}
                for t, code in results.items()
            ],
        })
    else:
        click.echo(_table(("TOPIC", "RESULT"), [
            [t, "deleted" if code == 0 else f"{error_name(code)} ({code})"] for t, code in results.items()
        ]))
    failed = {t: code for t, code in results.items() if code != 0}
    if failed:
        detail = ", ".join(f"{t}: {error_name(code)} ({code})" for t, code in failed.items())
        raise click.ClickException(f"start offsets of {len(failed)} of {len(results)} topics not deleted: {detail}")


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
@_command_options
def remove_members(call: _Call, group: str, instance_ids: tuple[str, ...], reason: str | None) -> None:
    """Remove static members of GROUP by group_instance_id (KIP-345; LeaveGroup v3+).

    The group rebalances without them. Exits 1 if any member was not removed
    (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ...), the group does not exist, or the
    coordinator cannot do LeaveGroup v3+.
    """
    if any(not i.strip() for i in instance_ids):
        raise click.BadParameter("an instance id must not be empty", call.ctx, param_hint="--instance-id")
    with call.admin() as (admin, deadline):
        description = _describe_existing(admin, group, deadline)
        member_ids = {m.group_instance_id: m.member_id for m in description.members if m.group_instance_id}
        results = admin.remove_members_by_instance_id(group, instance_ids, reason, _remaining_ms(deadline))
    rows = []
    for r in results:
        member_id = r.member_id or member_ids.get(r.group_instance_id, "")
        rows.append((r, member_id))
    failed = [r for r, _ in rows if r.error_code != 0]
    if call.as_json:
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


def configs_json(group: str, entries: Mapping[str, GroupConfigEntry]) -> dict[str, Any]:
    """The ``kgroup configs GROUP --json`` document (schema in ``docs/cli.md``)."""
    return {
        "group_id": group,
        "configs": [
            {"name": e.name, "value": e.value, "source": e.source, "is_default": e.is_default,
             "read_only": e.read_only, "sensitive": e.sensitive}
            for e in entries.values()
        ],
    }


def configs_text(entries: Mapping[str, GroupConfigEntry]) -> str:
    """The ``kgroup configs GROUP`` table: ``NAME``, ``VALUE`` (``-`` for none, sensitive ones hidden), ``SOURCE``."""
    return _table(("NAME", "VALUE", "SOURCE"), [
        [e.name, "(sensitive)" if e.sensitive else _dash(e.value), e.source] for e in entries.values()
    ])


def _parse_set(ctx: click.Context, given: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` (repeatable; the value may hold "="), each name once."""
    out: dict[str, str] = {}
    for text in given:
        name, equals, value = text.partition("=")
        name = name.strip()
        if not equals or not name:
            raise click.BadParameter(f"invalid {text!r}: expected NAME=VALUE", ctx, param_hint="--set")
        if name in out:
            raise click.BadParameter(f"{name!r} is given twice", ctx, param_hint="--set")
        out[name] = value
    return out


@main.command("configs")
@click.argument("group")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Set a config of the group (repeatable), as kafka-configs.sh --add-config.")
@click.option("--delete", "deletes", multiple=True, metavar="NAME",
              help="Delete a config of the group: back to the brokers' default (repeatable).")
@click.option("--validate-only", is_flag=True, help="Have the broker check the change, and apply nothing.")
@_command_options
def configs(call: _Call, group: str, sets: tuple[str, ...], deletes: tuple[str, ...], validate_only: bool) -> None:
    """Show GROUP's configs, or set and delete some (KIP-848, KIP-932), as kafka-configs.sh --entity-type groups.

    Without --set or --delete: every config of the group, its value and source
    (DYNAMIC_GROUP_CONFIG: set on the group; DEFAULT_CONFIG: the brokers' default;
    DescribeConfigs). With them: one IncrementalAlterConfigs (SET, DELETE); the broker checks
    every value and applies all or none (INVALID_CONFIG: exit 1 with its message). Group
    configs need Apache Kafka 3.8+.
    """
    if not group.strip():
        raise click.BadParameter("a group id must not be empty", call.ctx, param_hint="GROUP")
    wanted = _parse_set(call.ctx, sets)
    deleted = list(dict.fromkeys(name.strip() for name in deletes))
    if any(not name for name in deleted):
        raise click.BadParameter("a config name must not be empty", call.ctx, param_hint="--delete")
    both = sorted(set(wanted) & set(deleted))
    if both:
        raise click.UsageError(f"configs both set and deleted: {', '.join(both)}", call.ctx)
    if validate_only and not (wanted or deleted):
        raise click.UsageError("--validate-only needs --set or --delete", call.ctx)
    if not (wanted or deleted):
        with call.admin() as (admin, deadline):
            entries = admin.describe_group_configs(group, _remaining_ms(deadline))
        if call.as_json:
            _emit_json(configs_json(group, entries))
        else:
            click.echo(configs_text(entries))
        return
    with call.admin() as (admin, deadline):
        admin.alter_group_configs(group, set=wanted, delete=deleted, timeout_ms=_remaining_ms(deadline),
                                  validate_only=validate_only)
    if call.as_json:
        _emit_json({"group_id": group, "validate_only": validate_only, "set": wanted, "deleted": deleted})
        return
    done = "valid, not applied (--validate-only)" if validate_only else None
    click.echo(_table(("NAME", "RESULT"), [
        *([name, done or f"set to {value}"] for name, value in wanted.items()),
        *([name, done or "deleted: the brokers' default applies"] for name in deleted),
    ]))


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI as a program; return the exit code (for ``python -m kgroup``)."""
    try:
        main.main(args=list(argv) if argv is not None else None, prog_name="kgroup", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
