"""The calling API key: GET /v1/api-key, its scopes and expiry (the interactive reference reads
it to say what a pasted key may do)."""

from handlers.base import ANY_SCOPE, REALM, APIError, APIHandler

FIELDS = ("id", "name", "scopes", "createdAt", "expiresAt")


class APIKeyHandler(APIHandler):
    scopes = {"GET": ANY_SCOPE, "HEAD": ANY_SCOPE}  # any valid key may describe itself

    async def get(self) -> None:
        record = await self.store.keys.get(self.workspace_id, self.key.id)
        if record is None or record["revokedAt"] is not None:  # revoked since it was cached
            raise APIError(
                "unauthorized",
                "the API key is malformed, unknown or revoked",
                headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
            )
        self.send_json({"apiKey": {name: record[name] for name in FIELDS}})


default_handlers = [(r"/v1/api-key", APIKeyHandler)]
