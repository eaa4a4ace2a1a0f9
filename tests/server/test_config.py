"""Configuration: config.yaml defaults, environment overrides, refusal of unusable values."""

import pytest

from server.auth import resolve_secret
from server.config import ConfigError, load_config


def test_defaults_come_from_config_yaml():
    config = load_config(environ={})
    assert (config.host, config.port, config.mongodb_uri) == ("127.0.0.1", 8888, "")
    assert config.embedded and not config.throwaway
    assert config.sqlite_path == "data/workspace-api.sqlite3"


def test_environment_overrides_every_key():
    config = load_config(
        environ={
            "MONGODB_URI": "mongodb://db:27017",
            "WSAPI_PORT": "9001",
            "WSAPI_HOST": "0.0.0.0",
            "WSAPI_SECRET": "s" * 40,
            "WSAPI_KEY_CACHE_SECONDS": "1.5",
        }
    )
    assert (config.mongodb_uri, config.port, config.host) == ("mongodb://db:27017", 9001, "0.0.0.0")
    assert config.key_cache_seconds == 1.5 and not config.embedded


@pytest.mark.parametrize(
    "environ",
    [
        {"WSAPI_PORT": "http"},
        {"WSAPI_PORT": "0"},
        {"MONGODB_URI": "postgres://x"},
        {"WSAPI_KEY_CACHE_SECONDS": "30"},
    ],
)
def test_unusable_values_are_refused(environ):
    with pytest.raises(ConfigError):
        load_config(environ=environ)


def test_secret_is_required_with_mongodb_and_random_on_a_throwaway_store():
    with pytest.raises(ConfigError, match="WSAPI_SECRET"):
        resolve_secret(load_config(environ={"MONGODB_URI": "mongodb://db"}))
    with pytest.raises(ConfigError, match="at least 32"):
        resolve_secret(load_config(environ={"WSAPI_SECRET": "short"}))
    throwaway = load_config(environ={"MONGODB_URI": "memory"})
    assert resolve_secret(throwaway) != resolve_secret(throwaway)
    # On a SQLite file the secret kept in the file is used (None: ask the store).
    assert resolve_secret(load_config(environ={})) is None
    assert resolve_secret(load_config(environ={"WSAPI_SECRET": "k" * 40})) == "k" * 40
