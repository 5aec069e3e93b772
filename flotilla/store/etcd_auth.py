"""Turning etcd's authentication on, with one user per process and one role per service
(flotilla.security.etcd_roles), as `flotilla up` and deploy/k8s's bootstrap do.

etcd takes the common name of a client certificate as the user (it runs with
`--client-cert-auth`), so the users have no passwords. Reconciled, not appended: a role's
permissions and a user's roles become exactly what the table says, so running it again after an
upgrade narrows what an older table granted. Run as a user with the root role (before auth is
on, anyone is); `root` itself must exist before etcd lets auth be enabled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aetcd
import aetcd.rpc
import grpc

from flotilla.security.etcd_roles import ROOT_ROLE, Grant, grants_of


async def _call(method: object, request: object, *, exists_ok: bool = False) -> object:
    try:
        return await method(request, timeout=10)  # type: ignore[operator]
    except grpc.aio.AioRpcError as e:
        if exists_ok and e.code() == grpc.StatusCode.FAILED_PRECONDITION and "already exists" in (e.details() or ""):
            return None
        raise


def _grant_of(permission: object) -> Grant:
    return Grant(permission.key.decode(), permission.range_end.decode(), int(permission.permType))  # type: ignore[attr-defined]


async def enable(client: aetcd.Client, users: Mapping[str, str], admins: Sequence[str]) -> None:
    """Make `users` (etcd user -> role name) and `admins` (root) exist as the table says, then
    turn auth on (a no-op when it is on)."""
    auth = aetcd.rpc.AuthStub(client.channel)
    no_password = aetcd.rpc.UserAddOptions(no_password=True)
    for role in sorted(set(users.values())):
        await _call(auth.RoleAdd, aetcd.rpc.AuthRoleAddRequest(name=role), exists_ok=True)
        current = await _call(auth.RoleGet, aetcd.rpc.AuthRoleGetRequest(role=role))
        have = {_grant_of(p) for p in current.perm}  # type: ignore[attr-defined]
        want = set(grants_of(role))
        for extra in sorted(have - want):
            await _call(auth.RoleRevokePermission, aetcd.rpc.AuthRoleRevokePermissionRequest(
                role=role, key=extra.key.encode(), range_end=extra.range_end.encode()))
        for missing in sorted(want - have):
            await _call(auth.RoleGrantPermission, aetcd.rpc.AuthRoleGrantPermissionRequest(
                name=role, perm=aetcd.rpc.Permission(permType=missing.permission, key=missing.key.encode(),
                                                     range_end=missing.range_end.encode())))
    wanted = {**users, **{admin: ROOT_ROLE for admin in (ROOT_ROLE, *admins)}}
    for user, role in sorted(wanted.items()):
        await _call(auth.UserAdd, aetcd.rpc.AuthUserAddRequest(name=user, options=no_password), exists_ok=True)
        held = await _call(auth.UserGet, aetcd.rpc.AuthUserGetRequest(name=user))
        for other in sorted(set(held.roles) - {role}):  # type: ignore[attr-defined]
            await _call(auth.UserRevokeRole, aetcd.rpc.AuthUserRevokeRoleRequest(name=user, role=other))
        if role not in held.roles:  # type: ignore[attr-defined]
            await _call(auth.UserGrantRole, aetcd.rpc.AuthUserGrantRoleRequest(user=user, role=role))
    await _call(auth.AuthEnable, aetcd.rpc.AuthEnableRequest())
