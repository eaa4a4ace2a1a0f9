"""GET /v1/users: the workspace's non-deleted users (candidates for a list's ownerUserId)."""

from handlers.base import APIHandler


class UsersHandler(APIHandler):
    async def get(self) -> None:
        users = await self.store.users.list_active(self.workspace_id)
        self.send_json({"users": users})


default_handlers = [(r"/v1/users", UsersHandler)]
