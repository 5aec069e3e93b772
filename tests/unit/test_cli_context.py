"""Finding the control plane: --etcd-endpoints > FLOTILLA_ETCD_ENDPOINTS > the current context,
and one clear line when there is none. HOME and XDG_CONFIG_HOME point at tmp dirs throughout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flotilla.api.errors import UserError
from flotilla.plane import command
from flotilla.security import context as ctx
from tests.cli_runner import flotillactl


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with no plane: an empty home and config dir, no endpoint in the environment."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(ctx.ENV_CONFIG, raising=False)
    monkeypatch.delenv(ctx.ENV_ENDPOINTS, raising=False)
    return tmp_path


def plane_at(data_dir: Path, endpoints: str = "http://127.0.0.1:1") -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    ctx.Context(etcd_endpoints=endpoints, data_dir=str(data_dir.resolve())).save()
    ctx.set_current(data_dir)
    return data_dir


def test_pointer_lives_under_xdg_config_home_else_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ctx.pointer_path() == home / "config" / "flotilla" / "current"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert ctx.pointer_path() == home / "home" / ".config" / "flotilla" / "current"
    monkeypatch.setenv(ctx.ENV_CONFIG, str(home / "elsewhere"))
    assert ctx.pointer_path() == home / "elsewhere"


def test_context_file_format(home: Path) -> None:
    data_dir = plane_at(home / "plane", "http://127.0.0.1:4001")
    assert json.loads((data_dir / "context.json").read_text()) == {
        "etcd_endpoints": "http://127.0.0.1:4001", "data_dir": str(data_dir.resolve()), "sim_address": "",
        "tls_ca": "", "tls_cert": "", "tls_key": "", "encryption_key_file": "",
        "api_address": ""}
    assert ctx.pointer_path().read_text() == f"{data_dir.resolve()}\n"


@pytest.mark.parametrize(("flag", "env", "context", "data_dir", "expected"), [
    ("http://flag:1", "http://env:1", "http://ctx:1", None, "http://flag:1"),
    (None, "http://env:1", "http://ctx:1", None, "http://env:1"),
    (None, None, "http://ctx:1", None, "http://ctx:1"),
    # A --data-dir is a flag too: its plane beats the environment.
    (None, "http://env:1", "http://ctx:1", "other", "http://other:1"),
    ("http://flag:1", None, None, "other", "http://flag:1"),
], ids=["flag", "env", "context", "data-dir", "flag-over-data-dir"])
def test_resolution_order(home: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None, env: str | None,
                          context: str | None, data_dir: str | None, expected: str) -> None:
    if env:
        monkeypatch.setenv(ctx.ENV_ENDPOINTS, env)
    if context:
        plane_at(home / "plane", context)
    other = home / "other"
    other.mkdir()
    ctx.Context(etcd_endpoints="http://other:1", data_dir=str(other)).save()
    assert ctx.resolve_endpoints(flag, home / data_dir if data_dir else None) == expected


def test_nothing_to_find_is_one_line_naming_what_to_do() -> None:
    with pytest.raises(UserError, match=r"run `flotilla up`, or pass --etcd-endpoints"):
        ctx.resolve_endpoints(None)
    code, out, err = flotillactl("get", "clusters")
    assert (code, out) == (1, "")
    assert err == f"error: {ctx.NO_PLANE}\n"


def test_a_pointer_to_a_stopped_plane_says_so(home: Path) -> None:
    data_dir = plane_at(home / "plane")
    ctx.Context.remove(data_dir)
    code, _, err = flotillactl("status")
    assert code == 1 and len(err.splitlines()) == 1
    assert f"names {data_dir.resolve()}, where no control plane is running" in err


def test_a_damaged_context_file_is_one_line(home: Path) -> None:
    data_dir = plane_at(home / "plane")
    (data_dir / "context.json").write_text("{not json")
    code, _, err = flotillactl("status")
    assert code == 1 and len(err.splitlines()) == 1 and "context.json cannot be read" in err


def test_down_forgets_the_plane_and_only_its_own_pointer(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine, other = plane_at(home / "mine"), plane_at(home / "other")
    # The pointer names `other`: stopping `mine` leaves it.
    assert command.main(["down", "--data-dir", str(mine)]) == 0
    assert not (mine / "context.json").exists()
    assert ctx.current_data_dir() == other.resolve()
    assert command.main(["down", "--data-dir", str(other)]) == 0
    assert not ctx.pointer_path().exists()
    assert ctx.current_data_dir() is None


def test_down_without_data_dir_uses_the_current_context(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(home)  # no ./.flotilla here
    data_dir = plane_at(home / "plane")
    assert command.main(["down"]) == 0
    assert str(data_dir / "run.json") in capsys.readouterr().out
    assert not ctx.pointer_path().exists()


def test_sim_fault_without_a_plane_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["sim", "fault", "member1", "down"]) == 1
    err = capsys.readouterr().err
    assert err == f"flotilla sim: {ctx.NO_PLANE}\n"


def test_sim_fault_data_dir_without_a_plane_names_it(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["sim", "fault", "member1", "down", "--data-dir", str(home / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"no control plane is running from {home / 'nowhere'}" in err


def test_a_context_error_is_a_user_error() -> None:
    # Every command prints it as one line, as any other UserError.
    assert issubclass(ctx.ContextError, UserError)


@pytest.mark.parametrize(("flag", "env", "context", "expected"), [
    ("http://flag:1", "http://env:1", "http://ctx:1", "http://flag:1"),
    (None, "http://env:1", "http://ctx:1", "http://env:1"),
    (None, None, "http://ctx:1", "http://ctx:1"),
], ids=["flag", "env", "context"])
def test_a_service_finds_etcd_like_flotillactl(home: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None,
                                               env: str | None, context: str | None, expected: str) -> None:
    from flotilla.runtime import service

    if env:
        monkeypatch.setenv(ctx.ENV_ENDPOINTS, env)
    if context:
        plane_at(home / "plane", context)
    seen: list[str] = []

    async def run(self: service.Runner) -> None:
        seen.append(self.args.etcd_endpoints)

    monkeypatch.setattr(service.Runner, "run", run)
    monkeypatch.setattr(service.logging, "basicConfig", lambda **_: None)
    assert service.main(service.ServiceSpec(name="probe"), ["--etcd-endpoints", flag] if flag else []) == 0
    assert seen == [expected]


def test_a_service_without_a_plane_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from flotilla.runtime import service

    assert service.main(service.ServiceSpec(name="probe"), []) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"python -m services.probe: {ctx.NO_PLANE}\n")
    assert "2379" not in captured.err


def test_a_service_pointed_at_a_stopped_plane_exits_2(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flotilla.runtime import service

    ctx.Context.remove(plane_at(home / "plane"))
    assert service.main(service.ServiceSpec(name="probe"), []) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "where no control plane is running" in err
