"""A stable ``group_instance_id`` for orchestrated services (KIP-345 static membership).

The field report "Solving My Weird Kafka Rebalancing Problems" (section "Kafka Static
Membership") maps ``group.instance.id`` to the Kubernetes pod name,
which survives restarts only for a StatefulSet (``orders-0``, ``orders-1`` ...). A Deployment's
pods get a fresh random suffix on every restart (``orders-7d4b9c6f8d-x2k9p``), so a static
member named after one would come back as a *new* member: the old one lingers for the whole
session timeout with its partitions unconsumed, then a rebalance happens anyway. That is the
worst of both worlds, hence the warning below.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping

from kgroup.errors import ConfigError

__all__ = ["UnstableInstanceIdWarning", "instance_id_from_env"]

#: Kafka's limit for group.instance.id (``JoinGroupRequest.validateGroupInstanceId``)
MAX_INSTANCE_ID_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
# Kubernetes builds Deployment pod names as <name>-<pod-template-hash>-<5 random chars>, both
# suffixes drawn from its "safe" alphabet (no vowels, no 0/1/3, k8s.io/apimachinery rand).
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_DEPLOYMENT_POD = re.compile(rf"^.+-[{_SAFE}]{{6,10}}-[{_SAFE}]{{5}}$")


class UnstableInstanceIdWarning(UserWarning):
    """The instance id looks like a name that changes on every restart (a Deployment pod)."""


def instance_id_from_env(variable: str = "HOSTNAME", *, environ: Mapping[str, str] | None = None) -> str:
    """Read a static member's ``group_instance_id`` from the environment.

    Kubernetes sets ``HOSTNAME`` to the pod name; a StatefulSet's pod names (``app-0``,
    ``app-1``) are stable across restarts, which is what KIP-345 needs (KIP-345, "Kafka Static
    Membership"). Pass ``variable`` to read another variable, e.g. one set from the downward
    API (``metadata.name``).

    Args:
        variable: the environment variable holding the id (default ``HOSTNAME``).
        environ: the environment to read (default ``os.environ``), for tests.

    Returns:
        The instance id, stripped of surrounding whitespace.

    Raises:
        ConfigError: the variable is unset or empty, longer than 249 characters, or contains
            characters Kafka rejects (legal: ASCII letters, digits, ``.``, ``_``, ``-``);
            ``field`` is ``"group_instance_id"``.

    Warns:
        UnstableInstanceIdWarning: the value looks like a Deployment pod name
            (``<name>-<hash>-<5 chars>``), which changes on every restart.

    """
    env = os.environ if environ is None else environ
    value = env.get(variable, "").strip()
    if not value:
        raise ConfigError("group_instance_id", f"environment variable {variable} is unset or empty")
    if len(value) > MAX_INSTANCE_ID_LENGTH:
        raise ConfigError(
            "group_instance_id", f"{variable}={value[:40]!r}... is {len(value)} characters; Kafka allows 249"
        )
    if not _LEGAL.match(value):
        raise ConfigError(
            "group_instance_id",
            f"{variable}={value!r} contains characters Kafka rejects; use ASCII letters, digits, '.', '_', '-'",
        )
    if _DEPLOYMENT_POD.match(value):
        warnings.warn(
            f"{variable}={value!r} looks like a Kubernetes Deployment pod name, which changes on every "
            "restart: a static member named after it rejoins as a new member and the old one holds its "
            "partitions until session_timeout_ms expires. Use a StatefulSet (stable names like 'app-0') "
            "or set the id explicitly.",
            UnstableInstanceIdWarning,
            stacklevel=2,
        )
    return value
