"""`workspace-api demo`: the API on the embedded store, seeded with deterministic demo data.

Writes the keys file {"baseUrl", "workspaces": [{"id", "name", "apiKey"}]} and prints a banner.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import random
import uuid
from pathlib import Path

from tornado.netutil import bind_sockets

from server.app import http_server, make_app, open_services
from server.config import Config
from server.logs import setup_logging

log = logging.getLogger("workspace_api")

FIRST = [
    "Ava",
    "Liam",
    "Mia",
    "Noah",
    "Zoe",
    "Ethan",
    "Lena",
    "Omar",
    "Iris",
    "Hugo",
    "Nora",
    "Raj",
    "Sofia",
    "Tom",
    "Yara",
    "Felix",
    "Greta",
    "Ivan",
    "Julia",
    "Kenji",
]
LAST = [
    "Nguyen",
    "Schmidt",
    "Garcia",
    "Okafor",
    "Rossi",
    "Kowalski",
    "Haddad",
    "Silva",
    "Andersen",
    "Tanaka",
    "Dubois",
    "Murphy",
    "Novak",
    "Costa",
    "Ahmed",
    "Larsen",
]
COMPANIES = [
    ("Northwind", "northwind.example"),
    ("Contoso", "contoso.example"),
    ("Fabrikam", "fabrikam.example"),
    ("Tailspin", "tailspin.example"),
    ("Litware", "litware.example"),
    ("Proseware", "proseware.example"),
    ("Adatum", "adatum.example"),
    ("Woodgrove", "woodgrove.example"),
]
TITLES = [
    "VP Sales",
    "Head of Operations",
    "CFO",
    "IT Manager",
    "Procurement Lead",
    "Founder",
    "Office Manager",
    "Director of Marketing",
]
WORKSPACES = [
    {
        "name": "Acme Outbound",
        "users": 5,
        "lists": ["Q4 Enterprise", "SMB Re-engage", "Webinar Leads"],
        "prospects": 150,
    },
    {"name": "Globex Sales", "users": 3, "lists": ["Inbound Trials"], "prospects": 40},
]


def demo_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def demo_contact(rng: random.Random) -> dict:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    company, domain = rng.choice(COMPANIES)
    handle = f"{first}.{last}{rng.randint(1, 999)}".lower()
    return {
        "firstName": first,
        "lastName": last,
        "email": f"{handle}@{domain}",
        "phoneNumber": f"+1415555{rng.randint(0, 9999):04d}",
        "companyName": company,
        "companyDomain": domain,
        "jobTitle": rng.choice(TITLES),
        "linkedinUrl": f"https://www.linkedin.com/in/{handle.replace('.', '-')}",
    }


async def seed(store, auth, seed: int = 42, now: dt.datetime | None = None) -> list[dict]:
    """Create the demo workspaces; returns [{"id", "name", "apiKey"}]. Same seed, same data."""
    rng = random.Random(seed)
    now = now or dt.datetime(2026, 11, 21, 9, 30)
    result = []
    for spec in WORKSPACES:
        workspace = await store.workspaces.create(
            spec["name"], demo_uuid(rng), now - dt.timedelta(days=400)
        )
        wid = workspace["id"]
        users = []
        for i in range(spec["users"] + 1):
            first, last = FIRST[(i * 7 + len(result)) % len(FIRST)], LAST[i % len(LAST)]
            user = await store.users.create(
                wid,
                f"{first}.{last}@{spec['name'].split()[0].lower()}.example".lower(),
                first,
                last,
                now - dt.timedelta(days=300 - i),
                demo_uuid(rng),
            )
            users.append(user)
        await store.users.delete(wid, users[-1]["id"])  # one deleted user per workspace
        active = users[:-1]
        contacts = [demo_contact(rng) for _ in range(spec["prospects"])]
        for index, name in enumerate(spec["lists"]):
            owner = active[index % len(active)]
            created = now - dt.timedelta(days=60 - 15 * index, hours=rng.randint(0, 23))
            listing = await store.lists.create(
                wid, name, owner["id"], created_at=created, list_id=demo_uuid(rng)
            )
            members = rng.sample(contacts, k=min(len(contacts), 30 + 20 * index))
            for start in range(0, len(members), 100):
                added = await store.prospects.add_to_list(
                    wid, listing["id"], owner["id"], members[start : start + 100]
                )
                await store.lists.add_prospects(wid, listing["id"], added)
        _, key = await auth.create(wid, "demo key")
        result.append({"id": wid, "name": spec["name"], "apiKey": key})
    return result


def run_demo(config: Config, args) -> int:
    config = config.replace(mongodb_uri="memory", host=args.host, port=args.port)
    setup_logging(config.log_level)
    asyncio.run(_demo(config, args))
    return 0


async def _demo(config: Config, args) -> None:
    store, auth = await open_services(config)
    workspaces = await seed(store, auth, args.seed)
    sockets = bind_sockets(config.port, config.host)
    port = sockets[0].getsockname()[1]
    http_server(make_app(config, store, auth), config).add_sockets(sockets)
    host = f"[{config.host}]" if ":" in config.host else config.host
    origin = f"http://{host}:{port}"
    Path(args.keys_file).write_text(
        json.dumps({"baseUrl": f"{origin}/v1", "workspaces": workspaces}, indent=2) + "\n"
    )
    print(banner(origin, workspaces, args.keys_file), flush=True)
    await asyncio.Event().wait()


def banner(origin: str, workspaces: list[dict], keys_file: str) -> str:
    key = workspaces[0]["apiKey"]
    lines = [
        "",
        "Workspace Data API demo (embedded store: nothing is persisted)",
        f"  Base URL : {origin}/v1",
        f"  Console  : {origin}/reference",
        f"  API key  : {key}  ({workspaces[0]['name']})",
        f"  All keys : {keys_file}",
        "",
        f"  curl -H 'Authorization: Bearer {key}' {origin}/v1/users",
        "",
    ]
    return "\n".join(lines)
