"""``GroupPort``: what the poll thread uses of "the group", whichever stands for it.

A subscribed consumer's group is the group thread (``kgroup._driver.group_thread.GroupThread``);
a manually assigned one's is ``kgroup._driver.standalone.StandaloneGroup``, which only finds the
coordinator for commits. The facade (``kgroup.consumer``) and the offsets client
(``kgroup._driver.commits``) use either through this port and nothing else: the published
snapshot, ``post``, ``crashed`` and ``metadata_stale``. Starting and stopping the group thread
is the runtime's (``kgroup._driver.runtime``); a ``StandaloneGroup`` runs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kgroup.membership.states import MemberState
    from kgroup.types import Generation

__all__ = ["GroupPort", "GroupView"]


class GroupView(Protocol):
    """The published snapshot of the group, as the poll thread reads it (``MemberSnapshot``, ``StandaloneSnapshot``)."""

    @property
    def state(self) -> MemberState: ...

    @property
    def generation(self) -> Generation: ...

    @property
    def coordinator(self) -> int | None: ...

    @property
    def subscription(self) -> frozenset[str]: ...

    @property
    def fatal(self) -> Exception | None: ...

    @property
    def session_timeout_ms(self) -> int | None:
        """The session timeout in force (the broker's, under the consumer protocol), None: not known."""
        ...


class GroupPort(Protocol):
    """The group as the poll thread sees it: read the snapshot, post events (any thread)."""

    @property
    def snapshot(self) -> GroupView:
        """The latest published view of the membership."""
        ...

    @property
    def crashed(self) -> Exception | None:
        """The error that stopped the group thread, else None."""
        ...

    def post(self, event: object) -> None:
        """Queue an event for the membership machine."""

    def metadata_stale(self) -> None:
        """Fetching found a topic gone: refresh metadata now."""
