"""GET /v1/prospects: record shape, paging, ordering, every filter, validation, isolation."""

import datetime as dt
import uuid

import pytest

from schemas import Schemas
from tests.helpers import walk_pages

BASE = dt.datetime(2026, 2, 1, 8, 0)


async def walk(api, query=""):
    return await walk_pages(api, f"/v1/prospects?{query.lstrip('&')}", "prospects")


async def new_list(api, ws, name="Leads"):
    response = await api.post("/v1/lists", {"name": name, "ownerUserId": ws.users[0]["id"]})
    return response.json()["list"]["id"]


async def test_uploaded_prospect_has_every_field(api, ws_a):
    list_id = await new_list(api, ws_a)
    await api.post(
        f"/v1/lists/{list_id}/contacts",
        {
            "contacts": [
                {"firstName": "Ada", "email": "Ada@Example.com", "phoneNumber": "(415) 555-0101"}
            ]
        },
    )
    body = (await api.get("/v1/prospects")).json()
    [prospect] = body["prospects"]
    assert set(prospect) == {
        "id",
        "firstName",
        "lastName",
        "phoneNumber",
        "email",
        "companyName",
        "companyDomain",
        "jobTitle",
        "linkedinUrl",
        "ownerUserId",
        "listIds",
        "doNotCall",
        "doNotCallReason",
        "createdAt",
        "updatedAt",
    }
    assert prospect["doNotCall"] is False and prospect["doNotCallReason"] is None
    assert (prospect["firstName"], prospect["email"], prospect["phoneNumber"]) == (
        "Ada",
        "Ada@Example.com",
        "+14155550101",
    )
    assert prospect["lastName"] is None and prospect["linkedinUrl"] is None
    assert prospect["ownerUserId"] == ws_a.users[0]["id"]
    assert prospect["listIds"] == [list_id]
    assert Schemas().errors("/schemas/responses/prospects-page.json", body) == []
    assert "dedupeKey" not in str(body) and ws_a.id not in str(body)


async def test_walking_all_pages_returns_each_prospect_once_newest_first(api, store, ws_a):
    for i in range(110):
        await store.prospects.create(
            ws_a.id, {"email": f"p{i}@example.com"}, created_at=BASE + dt.timedelta(minutes=i % 4)
        )
    first = await api.get("/v1/prospects?page=1&pageSize=100")
    assert '</v1/prospects?page=2&pageSize=100>; rel="next"' in first.headers["Link"]
    seen, total = await walk(api)
    keys = [(p["createdAt"], p["id"]) for p in seen]
    assert total == 110 and len({p["id"] for p in seen}) == 110
    assert keys == sorted(keys, reverse=True)


@pytest.fixture
def people(io_loop, store, ws_a):
    """Prospects in two lists, with emails and phones, created and updated at known times."""
    lists = [str(uuid.uuid4()), str(uuid.uuid4())]

    async def seed():
        made = []
        for i in range(12):
            made.append(
                await store.prospects.create(
                    ws_a.id,
                    {
                        "firstName": f"P{i}",
                        "email": f"p{i}@example.com",
                        "phoneNumber": f"+4420794609{i:02d}",
                    },
                    list_ids=[lists[j] for j in range(2) if i % (j + 2) == 0],
                    created_at=BASE + dt.timedelta(hours=i),
                )
            )
        return made, lists

    return io_loop.run_sync(seed)


async def test_list_filter(api, people):
    made, lists = people
    for list_id in lists:
        seen, total = await walk(api, f"&listId={list_id.upper()}")
        expected = [p["id"] for p in reversed(made) if list_id in p["listIds"]]
        assert [p["id"] for p in seen] == expected and total == len(expected) > 0


@pytest.mark.parametrize("value", ["p3@example.com", "P3@EXAMPLE.com", "%20p3@example.com%20"])
async def test_email_filter_compares_like_the_matcher(api, people, value):
    seen, total = await walk(api, f"&email={value}")
    assert total == 1 and seen[0]["firstName"] == "P3"


@pytest.mark.parametrize(
    "value",
    ["%2B442079460905", "+44%2020%207946%200905", "%2B44%20(20)%207946-0905", "+442079460905"],
)
async def test_phone_filter_normalises_like_the_matcher(api, people, value):
    seen, total = await walk(api, f"&phoneNumber={value}")
    assert total == 1 and seen[0]["firstName"] == "P5"


async def test_phone_in_default_region(api, store, ws_a):
    await store.prospects.create(ws_a.id, {"phoneNumber": "+14155550199"})
    _seen, total = await walk(api, "&phoneNumber=(415)%20555-0199")
    assert total == 1


async def test_updated_since_is_inclusive_and_follows_uploads(api, store, ws_a, people):
    made, _ = people
    since = made[0]["updatedAt"]
    assert (await api.get(f"/v1/prospects?updatedSince={since.isoformat()}Z")).json()["total"] == 12
    later = "2026-02-01T08:00:00.001Z"
    assert (await api.get(f"/v1/prospects?updatedSince={later}")).json()["total"] == 11
    future = "2099-01-01T00:00:00Z"
    assert (await api.get(f"/v1/prospects?updatedSince={future}")).json()["total"] == 0
    # an upload that adds p1 to a list moves its updatedAt
    list_id = await new_list(api, ws_a)
    await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": [{"email": "p1@example.com"}]})
    # every prospect was made on 2026-02-01; the upload moved p1's updatedAt to the wall clock
    recent = (await api.get("/v1/prospects?updatedSince=2026-02-02T00:00:00Z")).json()
    assert [p["firstName"] for p in recent["prospects"]] == ["P1"]


@pytest.mark.parametrize(
    "value,count",
    [
        ("2026-02-01", 12),  # a date alone: 00:00:00.000 UTC of that day
        ("2026-02-02", 0),
        ("2026-02-01T10:00:00", 10),  # no offset: UTC (P2 to P11, 10:00 to 19:00 UTC)
        ("2026-02-01T10:00:00.000001", 9),  # rounded up to the next millisecond
        ("2026-02-01T11:00:00%2B01:00", 10),
        ("2026-02-01T10:00:00-01:00", 9),  # 11:00 UTC
    ],
)
async def test_updated_since_takes_dates_and_instants_without_offset(api, people, value, count):
    response = await api.get(f"/v1/prospects?updatedSince={value}")
    assert (response.code, response.json()["total"]) == (200, count)


BAD_QUERIES = {
    "listId=abc": "listId",
    "email=": "email",
    "email=%20%20": "email",
    "phoneNumber=call-me": "phoneNumber",
    "phoneNumber=12": "phoneNumber",
    "updatedSince=2026-02-30": "updatedSince",
    "updatedSince=2026-01-01T10:00": "updatedSince",
    "updatedSince=yesterday": "updatedSince",
    "pageSize=75": "pageSize",
    "name=Ada": "name",
    "email=" + "x" * 321: "email",
}


@pytest.mark.parametrize(
    "query,parameter", BAD_QUERIES.items(), ids=[*list(BAD_QUERIES)[:-1], "long email"]
)
async def test_bad_parameters_are_400_with_a_pointer(api, query, parameter):
    response = await api.get(f"/v1/prospects?{query}")
    assert response.code == 400
    error = response.json()["errors"][0]
    assert (error["parameter"], error["pointer"]) == (parameter, f"#/query/{parameter}")


async def test_prospects_are_isolated_between_workspaces(api, api_b, store, ws_a, ws_b, people):
    _made, lists = people
    assert (await api_b.get("/v1/prospects")).json()["total"] == 0
    for query in (f"listId={lists[0]}", "email=p0@example.com", "phoneNumber=%2B442079460900"):
        assert (await api_b.get(f"/v1/prospects?{query}")).json()["total"] == 0
        assert (await api.get(f"/v1/prospects?{query}")).json()["total"] >= 1
