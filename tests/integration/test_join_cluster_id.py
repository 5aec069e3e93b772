"""Issue 36: `flotillactl join` sets Cluster spec.id as Karmada's join does (the member's
kube-system namespace uid), and refuses a second join of the same member under another name;
the simulator's kube-system uid is stable per cluster. A member behind a proxy (the kubeconfig's
proxy-url, or --proxy-url) is joined through it, with spec.proxyURL."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from flotilla.api import registry
from flotilla.api.errors import UserError
from flotilla.cli.join import join_args, join_cluster, member_cluster_id, refuse_second_join
from flotilla.member import Credentials, load_kubeconfig
from flotilla.store import Store
from flotilla.store.embedded import free_port
from flotilla.store.memory import MemoryStore
from sim.state import cluster_uid
from tests.factories import make_cluster
from tests.integration.test_member_proxy import ConnectProxy

if TYPE_CHECKING:
    from tests.sim_fixtures import StartSim

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
pytest_plugins = ["tests.sim_fixtures"]


async def test_join_sets_the_members_id_and_refuses_the_same_member_under_another_name(
        store: Store, webhook: subprocess.Popen[bytes], start_sim: StartSim) -> None:
    server = await start_sim("member1", "member2")
    kubeconfig = str(server.kubeconfig_path("member1"))
    await join_cluster(store, join_args("member1", kubeconfig))
    joined = await store.get(registry.CLUSTER, "", "member1")
    assert joined.spec.id == cluster_uid("member1") != cluster_uid("member2")

    with pytest.raises(UserError, match='already joined as cluster "member1"'):
        await join_cluster(store, join_args("member1-again", kubeconfig))
    assert await store.try_get(registry.CLUSTER, "", "member1-again") is None, "nothing written"

    # Rejoining under its own name refreshes it; another member joins beside it.
    await join_cluster(store, join_args("member1", kubeconfig), rejoin=True)
    await join_cluster(store, join_args("member2", str(server.kubeconfig_path("member2"))))
    assert (await store.get(registry.CLUSTER, "", "member2")).spec.id == cluster_uid("member2")


async def test_the_id_is_the_kube_system_uid_and_stable_across_restarts(start_sim: StartSim) -> None:
    first = await start_sim("member1")
    uid = await member_cluster_id(load_kubeconfig(first.kubeconfig_path("member1")))
    again = await start_sim("member1")
    assert uid == cluster_uid("member1") == await member_cluster_id(load_kubeconfig(again.kubeconfig_path("member1")))


async def test_an_unreachable_member_has_no_id() -> None:
    assert await member_cluster_id(Credentials(f"https://127.0.0.1:{free_port()}", "t")) == ""


async def test_refuse_second_join_compares_ids_not_names(memory_store: MemoryStore) -> None:
    cluster = make_cluster("east")
    cluster.spec.id = "uid-1"
    await memory_store.create(cluster)
    await refuse_second_join(memory_store, "east", "uid-1")  # itself: a rejoin
    await refuse_second_join(memory_store, "west", "uid-2")
    with pytest.raises(UserError, match=r'"west": this member \(id uid-1\) is already joined as cluster "east"'):
        await refuse_second_join(memory_store, "west", "uid-1")


async def test_a_member_behind_a_proxy_joins_through_it(
        store: Store, webhook: subprocess.Popen[bytes], start_sim: StartSim, tmp_path: Path) -> None:
    server = await start_sim("member1")
    real = load_kubeconfig(server.kubeconfig_path("member1"))
    hidden = free_port()
    proxy = ConnectProxy({f"127.0.0.1:{hidden}": ("127.0.0.1", int(real.server.rsplit(":", 1)[1]))})
    await proxy.start()
    try:
        # kubectl's proxy-url in the kubeconfig, as a member behind a proxy has it.
        config = yaml.safe_load(server.kubeconfig_path("member1").read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{hidden}"
        config["clusters"][0]["cluster"]["proxy-url"] = proxy.url
        kubeconfig = tmp_path / "behind-proxy.yaml"
        kubeconfig.write_text(yaml.safe_dump(config))
        assert load_kubeconfig(kubeconfig).proxy_url == proxy.url

        await join_cluster(store, join_args("member1", str(kubeconfig)))
        joined = await store.get(registry.CLUSTER, "", "member1")
        assert joined.spec.proxy_url == proxy.url
        assert joined.spec.id == cluster_uid("member1"), "the id was read through the proxy"
        assert proxy.seen and all(target == f"CONNECT 127.0.0.1:{hidden}" for target, _ in proxy.seen)
    finally:
        await proxy.stop()
