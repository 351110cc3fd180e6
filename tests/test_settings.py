"""Label Studio settings (environment, `.env`), saved annotator logins, and the code fingerprint."""

from __future__ import annotations

import dataclasses
import re
import stat
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from knowref60k.core.errors import UserError
from knowref60k.core.versioning import code_fingerprint, data_fingerprint
from knowref60k_annotation.roster import Account, load_accounts, roles, save_accounts
from knowref60k_annotation.server import Server
from knowref60k_annotation.settings import (
    KEYS,
    Settings,
    default_demo_state_dir,
    default_state_dir,
    demo_settings,
    load_settings,
    read_env_file,
    write_default_env_file,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LABEL_STUDIO_* or KNOWREF60K_PROJECT from the shell running the tests."""
    for key in (*KEYS, "KNOWREF60K_PROJECT"):
        monkeypatch.delenv(key, raising=False)


def write_env(path: Path, **values: str) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")
    return path


FILE_VALUES = {
    "LABEL_STUDIO_URL": "http://127.0.0.1:8123",
    "LABEL_STUDIO_USERNAME": "file-admin@example.test",
    "LABEL_STUDIO_PASSWORD": "file-password",
    "LABEL_STUDIO_API_KEY": "file-token",
}


# ---- read_env_file / write_default_env_file ----


def test_read_env_file_skips_comments_and_blanks_and_unquotes(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "# a comment=with an equals sign\n"
        "\n"
        "   \n"
        "  # indented=comment\n"
        "PLAIN=value\n"
        'DOUBLE="double quoted value"\n'
        "SINGLE='single quoted'\n"
        "EQUALS=a=b==c\n"
        "  SPACED  =  padded value  \n"
        "EMPTY=\n"
        "a line without an equals sign\n",
        encoding="utf-8",
    )
    assert read_env_file(path) == {
        "PLAIN": "value",
        "DOUBLE": "double quoted value",
        "SINGLE": "single quoted",
        "EQUALS": "a=b==c",
        "SPACED": "padded value",
        "EMPTY": "",
    }
    assert read_env_file(tmp_path / "missing.env") == {}


def test_default_env_file_is_private_with_four_keys_and_fresh_secrets(tmp_path: Path) -> None:
    first, second = tmp_path / "one.env", tmp_path / "two.env"
    values = write_default_env_file(first)
    other = write_default_env_file(second)
    assert mode(first) == 0o600 and mode(second) == 0o600
    assert tuple(values) == KEYS
    assert read_env_file(first) == values  # what it returns is what a later read gets back
    assert values["LABEL_STUDIO_URL"] == "http://127.0.0.1:8080"
    assert values["LABEL_STUDIO_USERNAME"] == other["LABEL_STUDIO_USERNAME"] == "admin@knowref60k.local"
    for key in ("LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_API_KEY"):
        assert values[key] != other[key]
        assert len(values[key]) >= 24
    assert re.fullmatch(r"[0-9a-f]{40}", values["LABEL_STUDIO_API_KEY"])
    assert first.read_text(encoding="utf-8").startswith("# ")


def test_default_env_file_tightens_an_existing_open_file(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("old\n")
    path.chmod(0o644)
    write_default_env_file(path)
    assert mode(path) == 0o600
    assert "old" not in path.read_text()


# ---- load_settings ----


def test_settings_come_from_the_env_file(tmp_path: Path) -> None:
    settings = load_settings(write_env(tmp_path / ".env", **FILE_VALUES))
    assert settings == Settings(
        url="http://127.0.0.1:8123",
        username="file-admin@example.test",
        password="file-password",
        api_key="file-token",
        project="KnowRef-60K pronoun resolution",
    )


def test_the_demo_has_a_label_studio_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWREF60K_DEMO_LABEL_STUDIO_URL", raising=False)
    settings = load_settings(write_env(tmp_path / ".env", **FILE_VALUES))
    demo = demo_settings(settings)
    assert demo.url == "http://127.0.0.1:8081" and demo.project == "knowref60k demo (simulated annotators)"
    assert (demo.username, demo.password, demo.api_key) == (
        settings.username,
        settings.password,
        settings.api_key,
    )
    # another port, and another data folder: the real project's annotators never see the demo's
    assert Server(demo).data_dir == default_demo_state_dir() / "data" != Server(settings).data_dir
    assert default_demo_state_dir() != default_state_dir()
    monkeypatch.setenv("KNOWREF60K_DEMO_LABEL_STUDIO_URL", "http://127.0.0.1:9999/")
    assert demo_settings(settings).url == "http://127.0.0.1:9999"


def test_environment_wins_over_the_env_file_key_by_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_env(tmp_path / ".env", **FILE_VALUES)
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9000/")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "env-token")
    monkeypatch.setenv("LABEL_STUDIO_PASSWORD", "")  # empty: the file's value stays
    monkeypatch.setenv("KNOWREF60K_PROJECT", "my project")
    settings = load_settings(path)
    assert settings == Settings(
        url="http://127.0.0.1:9000",  # trailing slash dropped
        username="file-admin@example.test",
        password="file-password",
        api_key="env-token",
        project="my project",
    )


def test_environment_alone_is_enough_and_the_url_has_a_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABEL_STUDIO_USERNAME", "env-admin")
    monkeypatch.setenv("LABEL_STUDIO_PASSWORD", "env-password")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "env-token")
    settings = load_settings(tmp_path / "missing.env")
    assert (settings.url, settings.username, settings.password, settings.api_key) == (
        "http://127.0.0.1:8080",
        "env-admin",
        "env-password",
        "env-token",
    )
    assert not (tmp_path / "missing.env").exists()


def test_create_writes_the_env_file_once_and_reuses_its_secrets(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    first = load_settings(path, create=True)
    assert mode(path) == 0o600
    written = path.read_bytes()
    second = load_settings(path, create=True)
    assert second == first
    assert path.read_bytes() == written
    assert (first.url, first.port) == ("http://127.0.0.1:8080", 8080)
    assert first.username == "admin@knowref60k.local"
    assert first.password in written.decode() and first.api_key in written.decode()


def test_missing_keys_are_a_user_error_naming_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / ".env"
    with pytest.raises(UserError) as error:
        load_settings(path)
    assert str(error.value).startswith(
        "Label Studio settings missing: LABEL_STUDIO_USERNAME, LABEL_STUDIO_PASSWORD, LABEL_STUDIO_API_KEY. "
    )
    assert str(path) in str(error.value)
    assert not path.exists()  # without create nothing is written

    write_env(path, LABEL_STUDIO_USERNAME="admin", LABEL_STUDIO_API_KEY="token")
    with pytest.raises(UserError, match=r"settings missing: LABEL_STUDIO_PASSWORD\. "):
        load_settings(path)
    monkeypatch.setenv("LABEL_STUDIO_PASSWORD", "from the environment")
    assert load_settings(path).password == "from the environment"


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("http://127.0.0.1:8080", 8080),
        ("http://127.0.0.1:54321/", 54321),
        ("http://localhost:9001/label-studio/", 9001),
    ],
)
def test_settings_port(url: str, port: int) -> None:
    assert Settings(url=url, username="u", password="p", api_key="k").port == port


# ---- saved annotator logins ----


def test_save_accounts_appends_keeps_the_file_private_and_never_changes_a_role(tmp_path: Path) -> None:
    settings = Settings("http://127.0.0.1:9", "u", "p", "k", state_dir=tmp_path / "state")
    path = tmp_path / "state" / "annotators.json"
    save_accounts(settings, [Account("a@x.test", "pw-a", 3, "screener")])
    assert mode(path) == 0o600
    path.chmod(0o644)
    save_accounts(
        settings, [Account("b@x.test", "pw-b", 4, "resolver"), Account("c@x.test", None, 5, "resolver")]
    )
    assert mode(path) == 0o600
    assert orjson.loads(path.read_bytes()) == [
        {"email": "a@x.test", "password": "pw-a", "user_id": 3, "role": "screener"},
        {"email": "b@x.test", "password": "pw-b", "user_id": 4, "role": "resolver"},
        {"email": "c@x.test", "password": None, "user_id": 5, "role": "resolver"},
    ]
    with pytest.raises(UserError, match=re.escape("a@x.test is a screener: an account screens or resolves")):
        save_accounts(settings, [Account("a@x.test", "pw-a", 3, "resolver")])
    with pytest.raises(UserError, match="unknown role 'reviewer'"):
        save_accounts(settings, [Account("d@x.test", "pw", 6, "reviewer")])
    assert roles(settings) == {"a@x.test": "screener", "b@x.test": "resolver", "c@x.test": "resolver"}
    path.write_text('[{"email": 1}]')
    with pytest.raises(UserError, match="not a list of annotator accounts"):
        load_accounts(settings)


# ---- code fingerprint ----


@pytest.fixture
def fake_package(tmp_path: Path) -> Path:
    """A package folder where `a` imports `b` (inside a function), and `c` stands alone."""
    (tmp_path / "a.py").write_text("def f():\n    from knowref60k.b import B\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("B = 2\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("C = 3\n", encoding="utf-8")
    return tmp_path


def test_code_fingerprint_of_the_real_package_is_16_hex_digits() -> None:
    fingerprint = code_fingerprint("knowref60k.extract.cleaning", "knowref60k.release.splits")
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert code_fingerprint("knowref60k.release.splits", "knowref60k.extract.cleaning") == fingerprint
    assert code_fingerprint("knowref60k.extract.cleaning") != fingerprint


def test_code_fingerprint_is_pinned_for_fixed_sources(fake_package: Path) -> None:
    assert code_fingerprint("knowref60k.a", root=fake_package) == "b4671ba7ab35e7b5"
    assert code_fingerprint("knowref60k.b", root=fake_package) == "448f441671cf038d"


def test_code_fingerprint_follows_imports_and_ignores_argument_order(fake_package: Path) -> None:
    with_import = code_fingerprint("knowref60k.a", root=fake_package)
    assert with_import == code_fingerprint("knowref60k.b", "knowref60k.a", root=fake_package)
    assert with_import != code_fingerprint("knowref60k.a", "knowref60k.c", root=fake_package)


def test_code_fingerprint_follows_the_source_of_its_modules_only(fake_package: Path) -> None:
    before = code_fingerprint("knowref60k.a", root=fake_package)
    (fake_package / "c.py").write_text("C = 4\n", encoding="utf-8")  # an unrelated module
    assert code_fingerprint("knowref60k.a", root=fake_package) == before
    (fake_package / "b.py").write_text("B = 3\n", encoding="utf-8")  # imported by a
    assert code_fingerprint("knowref60k.a", root=fake_package) != before
    (fake_package / "b.py").write_text("B = 2\n", encoding="utf-8")
    assert code_fingerprint("knowref60k.a", root=fake_package) == before  # same source, same fingerprint


def test_port_of_a_url_without_one_follows_the_scheme() -> None:
    settings = Settings(url="http://example.org", username="u", password="p", api_key="k")
    assert settings.port == 80
    assert dataclasses.replace(settings, url="https://example.org/ls").port == 443


def test_private_files_are_never_readable_by_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from knowref60k_annotation.settings import write_private

    seen: list[int] = []
    real_fdopen = os.fdopen

    def watching_fdopen(descriptor: int, *args: Any) -> Any:  # the mode when the secret starts to be written
        seen.append(stat.S_IMODE(os.fstat(descriptor).st_mode))
        return real_fdopen(descriptor, *args)

    monkeypatch.setattr(os, "fdopen", watching_fdopen)
    old = os.umask(0o022)
    try:
        path = tmp_path / "secret"
        path.write_text("old")
        path.chmod(0o644)
        write_private(path, b"new secret")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"new secret" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert seen == [0o600]


def test_settings_from_the_environment_write_no_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in zip(KEYS, ("http://127.0.0.1:9", "u@x", "pw", "k" * 40), strict=True):
        monkeypatch.setenv(key, value)
    settings = load_settings(tmp_path / ".env", create=True)
    assert (settings.url, settings.username) == ("http://127.0.0.1:9", "u@x")
    assert not (tmp_path / ".env").exists()


def test_data_fingerprint_follows_the_lists_rules_read(tmp_path: Path) -> None:
    (tmp_path / "names.tsv").write_text("name\nAda\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("where the names come from\n", encoding="utf-8")
    before = data_fingerprint(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{16}", before)
    (tmp_path / "README.md").write_text("edited\n", encoding="utf-8")
    assert data_fingerprint(tmp_path) == before
    (tmp_path / "names.tsv").write_text("name\nAda\nGrace\n", encoding="utf-8")
    assert data_fingerprint(tmp_path) != before


def test_a_password_in_a_url_is_masked_wherever_settings_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    from knowref60k.labelling.labelstudio_table import without_password
    from knowref60k_annotation.connection import connection_settings

    assert without_password("postgresql://team:S3cr/etPassw0rd@db.example:5432/x") == (
        "postgresql://team:***@db.example:5432/x"
    )
    assert without_password("postgresql://u@db.example/x") == "postgresql://u@db.example/x"
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://ops:hunter2@ls.example:8080")
    monkeypatch.setenv("KNOWREF60K_RECEIVER_URL", "http://hook:s3/cr@t@127.0.0.1:9/")
    shown = {setting.key: setting.value for setting in connection_settings()}
    assert shown["url"] == "http://ops:***@ls.example:8080"
    assert shown["receiver_url"] == "http://hook:***@127.0.0.1:9/"


def test_a_partial_env_file_is_completed_keeping_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    path = tmp_path / ".env"
    path.write_text("LABEL_STUDIO_URL=http://127.0.0.1:8111\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"missing: LABEL_STUDIO_USERNAME.*or completes it"):
        load_settings(path)
    settings = load_settings(path, create=True)
    assert settings.url == "http://127.0.0.1:8111" and settings.username and settings.api_key
    assert mode(path) == 0o600 and load_settings(path) == settings


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_server_keeps_an_idle_connection_open_longer_than_its_clients_do(database: str) -> None:
    """A client that sends on a connection the server is closing at that moment is reset: the clients
    (httpx, under the SDK and the annotator sessions) must give up an idle connection first."""
    settings = Settings(
        url="http://127.0.0.1:8123",
        username="a@example.test",
        password="p",
        api_key="k",
        project="p",
        database=database,
        workers=3,
    )
    command = Server(settings).command()
    keep_alive = float(command[command.index("--keep-alive") + 1])
    assert keep_alive > httpx.Limits().keepalive_expiry
