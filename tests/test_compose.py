"""compose.yaml holds together with the Containerfile and the service's configuration: the API
service reaches the MongoDB 7 service by its name with the user the MongoDB image creates, takes
both secrets from the environment (refusing to start without them), waits for MongoDB's health
check, checks its own with the image's HEALTHCHECK command, and MongoDB keeps its data in a
named volume. (No compose tool runs here: tests/test_container_image.py runs the image itself.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
API, MONGODB = COMPOSE["services"]["api"], COMPOSE["services"]["mongodb"]


def required(value: str) -> list[str]:
    """The variables `value` interpolates with compose's `${NAME:?message}` (required) form."""
    return re.findall(r"\$\{(\w+):\?[^}]*\}", value)


def interpolated(value: str, **environ: str) -> str:
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda found: environ[found[1]], value)


def test_the_api_is_built_from_the_checkout_and_reaches_mongodb_7_by_name():
    assert API["build"] == "." and MONGODB["image"].endswith("library/mongo:7")
    password = MONGODB["environment"]["MONGO_INITDB_ROOT_PASSWORD"]
    assert required(password) == ["MONGODB_PASSWORD"]
    hex_password = "0123456789abcdef" * 3  # as deployment.md makes it: openssl rand -hex 24
    uri = urlsplit(interpolated(API["environment"]["MONGODB_URI"], MONGODB_PASSWORD=hex_password))
    assert uri.scheme == "mongodb" and uri.hostname == "mongodb" and uri.port == 27017
    assert uri.username == MONGODB["environment"]["MONGO_INITDB_ROOT_USERNAME"]
    assert uri.password == interpolated(password, MONGODB_PASSWORD=hex_password)


def test_the_secrets_come_only_from_the_environment():
    assert required(API["environment"]["WSAPI_SECRET"]) == ["WSAPI_SECRET"]
    assert required(API["environment"]["MONGODB_URI"]) == ["MONGODB_PASSWORD"]


def test_the_api_waits_for_mongodb_and_both_have_health_checks():
    assert API["depends_on"] == {"mongodb": {"condition": "service_healthy"}}
    assert "mongosh" in MONGODB["healthcheck"]["test"]
    containerfile = (ROOT / "Containerfile").read_text()
    [image_check] = re.findall(r"^\s+CMD (\[.*\])$", containerfile, re.M)
    assert API["healthcheck"]["test"] == ["CMD", *json.loads(image_check)]


def test_mongodb_keeps_its_data_in_a_named_volume():
    [mount] = MONGODB["volumes"]
    name, _, path = mount.partition(":")
    assert path == "/data/db" and name in COMPOSE["volumes"]
