"""The pipeline's webhooks, kept as the pipeline set them: any account of a Community server can list,
create, change and delete webhooks, so each sync and each start of the receiver reviews them.

A project of ours gets exactly one webhook: to the vote receiver, with the shared secret and the vote
actions. Any other webhook that sends our projects' events (one of our projects', or the organization's,
which fires for every project) is removed; ours is restored where it was changed, made again where it
was deleted. What was done is logged and reported by the sync.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .settings import SECRET_HEADER, WEBHOOK_ACTIONS

# The fields of our webhook that the review restores, besides its url and project.
KEPT_FIELDS = ("is_active", "send_payload", "send_for_all_actions", "actions", "headers")


@dataclass(frozen=True)
class WebhookSpec:
    """The webhook each of our projects has: to `url`, carrying `secret`."""

    url: str
    secret: str

    def fields(self) -> dict[str, Any]:
        return {
            "is_active": True,
            "send_payload": True,
            "send_for_all_actions": False,
            "actions": list(WEBHOOK_ACTIONS),
            "headers": {SECRET_HEADER: self.secret},
        }

    def differs(self, hook: Mapping[str, Any]) -> list[str]:
        """The fields of `hook` that are not as the pipeline set them (actions in any order)."""
        wanted = self.fields()
        found = {**hook, "actions": sorted(hook.get("actions") or [])}
        wanted["actions"] = sorted(wanted["actions"])
        return [name for name in KEPT_FIELDS if found.get(name) != wanted[name]]


@dataclass
class WebhookReview:
    """What to do about a server's webhooks: the ids to remove and ours to restore (id -> the fields that
    were changed), with a line for each; and the projects whose webhook is missing."""

    remove: list[int] = field(default_factory=list)
    restore: dict[int, list[str]] = field(default_factory=dict)
    create: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def review(hooks: list[Mapping[str, Any]], projects: Collection[int], spec: WebhookSpec) -> WebhookReview:
    """Decide what to do about `hooks` (every webhook of the organization) for our `projects`. Webhooks of
    other projects on the same server are not ours to judge and are left alone."""
    result = WebhookReview()
    kept: set[int] = set()
    for hook in sorted(hooks, key=lambda h: int(h["id"])):
        project = hook.get("project")
        if project is not None and project not in projects:
            continue
        if project is not None and hook.get("url") == spec.url and project not in kept:
            kept.add(project)
            changed = spec.differs(hook)
            if changed:
                result.restore[int(hook["id"])] = changed
                fields = ", ".join(changed)
                result.lines.append(f"restored webhook {hook['id']} of project {project}: {fields}")
            continue
        result.remove.append(int(hook["id"]))
        whose = f"project {project}" if project is not None else "the whole organization"
        url = hook.get("url")
        result.lines.append(f"removed webhook {hook['id']} of {whose} to {url!r}: not the pipeline's")
    for project in sorted(set(projects) - kept):
        result.create.append(project)
    return result


# Networks no webhook may reach (IANA's special-purpose address registries: this host, private, shared,
# link-local, documentation, multicast and reserved ranges). Label Studio bans them when its SSRF
# protection is on; the server is given this list with the receiver's own address cut out of it.
SPECIAL_PURPOSE_NETWORKS = (
    "0.0.0.0/8 10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 172.16.0.0/12 192.0.0.0/24 "
    "192.0.2.0/24 192.88.99.0/24 192.168.0.0/16 198.18.0.0/15 198.51.100.0/24 203.0.113.0/24 224.0.0.0/4 "
    "240.0.0.0/4 255.255.255.255/32 ::/128 ::1/128 ::ffff:0:0/96 64:ff9b::/96 64:ff9b:1::/48 100::/64 "
    "::ffff:0:0:0/96 2001::/32 2001:20::/28 2001:db8::/32 2002::/16 fc00::/7 fe80::/10 ff00::/8"
).split()


def banned_networks(allowed: Collection[str]) -> list[str]:
    """SPECIAL_PURPOSE_NETWORKS less the `allowed` addresses (each cut out as a single address)."""
    banned = [ipaddress.ip_network(network) for network in SPECIAL_PURPOSE_NETWORKS]
    for address in {ipaddress.ip_address(a) for a in allowed}:
        single = ipaddress.ip_network(address)
        banned = [
            part
            for network in banned
            for part in (
                network.address_exclude(single)  # type: ignore[arg-type]
                if network.version == single.version and single.subnet_of(network)  # type: ignore[arg-type]
                else [network]
            )
        ]
    return sorted(str(network) for network in banned)
