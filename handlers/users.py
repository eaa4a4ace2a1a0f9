"""The workspace's users: GET/POST /v1/users, GET/PATCH/DELETE /v1/users/{id}. Reading needs
`read`; creating, changing and deleting a user need `admin`."""

from handlers.base import APIError, APIHandler, invalid, not_found, path_uuid
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from store.users import InvalidEmail, UserExists


def user_exists() -> APIError:
    """The 409 of an email a non-deleted user of the workspace holds."""
    return APIError(
        "user_exists",
        "another user of your workspace has this email",
        [{"pointer": "#/email", "detail": "is the email of another user of your workspace"}],
    )


def bad_email(detail: str) -> APIError:
    return invalid([{"pointer": "#/email", "detail": detail}])


class UsersHandler(IdempotentHandler):
    scopes = {"GET": "read", "HEAD": "read", "POST": "admin"}
    body_schemas = {"POST": "/schemas/requests/user-create.json"}

    async def get(self) -> None:
        users = await self.store.users.list_active(self.workspace_id)
        self.send_json({"users": users})

    @idempotent
    async def post(self) -> None:
        body = self.body
        try:
            created = await self.store.users.create(
                self.workspace_id,
                body["email"],
                body["firstName"].strip(),
                body["lastName"].strip(),
                once=self.once,
            )
        except UserExists:
            raise user_exists() from None
        except InvalidEmail as exc:
            raise bad_email(str(exc)) from None
        self.answer(created)

    def reply(self, created: dict) -> Reply:
        return Reply(201, {"user": created}, f"/v1/users/{created['id']}")


class UserHandler(APIHandler):
    scopes = {"GET": "read", "HEAD": "read", "PATCH": "admin", "DELETE": "admin"}
    body_schemas = {"PATCH": "/schemas/requests/user-update.json"}

    async def get(self, user_id: str) -> None:
        user_id = path_uuid(user_id, "user")
        found = await self.store.users.get(self.workspace_id, user_id)
        if found is None:
            raise not_found("user")
        self.send_json({"user": found})

    async def patch(self, user_id: str) -> None:
        user_id = path_uuid(user_id, "user")
        try:
            changed = await self.store.users.update(self.workspace_id, user_id, self.body)
        except UserExists:
            raise user_exists() from None
        except InvalidEmail as exc:
            raise bad_email(str(exc)) from None
        if changed is None:
            raise not_found("user")
        self.send_json({"user": changed[0]})

    async def delete(self, user_id: str) -> None:
        user_id = path_uuid(user_id, "user")
        users = self.store.users
        # A user deleted before (by this API or the command line) is deleted: 204 again.
        if not await users.delete(self.workspace_id, user_id) and not await users.get(
            self.workspace_id, user_id
        ):
            raise not_found("user")
        self.set_status(204)
        self.finish()


default_handlers = [
    (r"/v1/users", UsersHandler),
    (r"/v1/users/([^/]+)", UserHandler),
]
