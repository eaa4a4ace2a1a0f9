"""docs/configuration.md cannot drift from the code: its table of keys names every field of the
Config class, each with the environment variable that overrides it and config.yaml's default,
and nothing else."""

from __future__ import annotations

import dataclasses

import yaml

from server.config import REPO_CONFIG, Config, env_name, load_config
from tests.docs.markdown import code, read, section, tables

FIELDS = {field.name: field for field in dataclasses.fields(Config)}
KINDS: dict[object, type] = {"int": int, "float": float, "str": str}


def documented() -> dict[str, dict[str, str]]:
    [table] = tables(section(read("docs/configuration.md"), "## Keys"))
    rows = {code(row["Key"]): row for row in table}
    assert len(rows) == len(table), "a key has two rows"
    return rows


def defaults() -> dict:
    return yaml.safe_load(REPO_CONFIG.read_text())


def test_every_config_key_has_exactly_one_row_and_no_row_names_another():
    assert set(documented()) == set(FIELDS)


def test_config_yaml_sets_every_key():
    # A key missing from config.yaml would silently default to "" or 0.
    assert set(defaults()) == set(FIELDS)


def test_each_row_names_the_environment_variable_that_overrides_the_key():
    for key, row in documented().items():
        variable = code(row["Environment variable"])
        assert variable == env_name(key), key
        # and that variable really is the one read: set it and the loaded value follows
        value = "3" if FIELDS[key].type in ("int", "float") else "documented-value"
        if key == "mongodb_uri":
            value = "memory"
        elif key == "sqlite_synchronous":  # one of its values (not the default)
            value = "normal"
        elif key == "public_base_url":  # a URL
            value = "https://documented.example"
        config = load_config(environ={variable: value})
        assert getattr(config, key) == KINDS[FIELDS[key].type](value), key


def test_each_row_gives_the_default_of_config_yaml():
    raw = defaults()
    for key, row in documented().items():
        shown = yaml.safe_load(code(row["Default"]))
        kind = KINDS[FIELDS[key].type]
        assert kind(shown) == kind(raw[key]), (
            f"{key}: documented {shown!r}, config.yaml {raw[key]!r}"
        )
        assert str(shown) == str(raw[key]), f"{key}: documented {shown!r}, config.yaml {raw[key]!r}"


def test_each_row_says_what_the_key_means():
    for key, row in documented().items():
        assert len(row["Meaning"].split()) >= 4, key
