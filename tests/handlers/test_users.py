"""GET /v1/users: the workspace's non-deleted users, nothing else."""

from schemas import Schemas


async def test_lists_active_users_of_own_workspace(api, ws_a, ws_b):
    response = await api.get("/v1/users")
    assert response.code == 200
    users = response.json()["users"]
    assert sorted(u["id"] for u in users) == sorted(u["id"] for u in ws_a.users)
    assert users == sorted(users, key=lambda u: (u["createdAt"], u["id"]))
    assert ws_a.deleted_user["id"] not in {u["id"] for u in users}
    assert not {u["id"] for u in ws_b.users} & {u["id"] for u in users}
    schemas = Schemas()
    for user in users:
        assert set(user) == {"id", "email", "firstName", "lastName", "createdAt", "updatedAt"}
        assert schemas.errors("/schemas/records/user.json", user) == []


async def test_deleting_a_user_hides_it(api, store, ws_a):
    await store.users.delete(ws_a.id, ws_a.users[0]["id"])
    users = (await api.get("/v1/users")).json()["users"]
    assert ws_a.users[0]["id"] not in {u["id"] for u in users}


async def test_unknown_query_parameter_is_400(api):
    response = await api.get("/v1/users?workspaceId=x")
    assert response.code == 400
    assert response.json()["errors"][0]["parameter"] == "workspaceId"


async def test_head_is_get_without_the_body(api, anon):
    get = await api.get("/v1/users")
    head = await api.fetch("/v1/users", "HEAD")
    assert head.code == 200 and head.body == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert (await anon.fetch("/v1/users", "HEAD")).code == 401
    post_only = await api.fetch("/v1/lists/00000000-0000-4000-8000-000000000000/contacts", "HEAD")
    assert post_only.code == 405 and post_only.headers["Allow"] == "POST"
