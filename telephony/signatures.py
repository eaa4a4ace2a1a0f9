"""The provider's request signature, `X-Twilio-Signature`: base64 of the HMAC-SHA1, keyed by the
account's auth token, of the full URL the provider requested followed by every form parameter,
sorted by name, as name then value (a name given several times: its values sorted, each once).

`sign` is what the provider (and the simulated one) computes; `valid` is what the service
checks a callback with. As the provider's own validator does, a signature over the URL with
its port removed, or with the scheme's default port added, is accepted as well.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

HEADER = "X-Twilio-Signature"

Params = Mapping[str, str | Iterable[str]]


def sign(token: str, url: str, params: Params) -> str:
    """The signature of a request to `url` with form parameters `params`."""
    text = [url]
    for name in sorted(set(params)):
        value = params[name]
        values = [value] if isinstance(value, str) else list(value)
        text.extend(name + one for one in sorted(set(values)))
    digest = hmac.new(token.encode(), "".join(text).encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def url_variants(url: str) -> list[str]:
    """`url` as given, without its port, and with the scheme's default port."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    bare = host if host.endswith("]") or ":" not in host else host.rsplit(":", 1)[0]
    default = "443" if parts.scheme == "https" else "80"
    variants = [url, parts._replace(netloc=bare).geturl()]
    if bare == host:
        variants.append(parts._replace(netloc=f"{bare}:{default}").geturl())
    return list(dict.fromkeys(variants))


def valid(token: str, url: str, params: Params, signature: str | None) -> bool:
    """Whether `signature` is the provider's for this request; False without a token."""
    if not token or not signature:
        return False
    given = signature.strip().encode()
    return any(
        hmac.compare_digest(sign(token, variant, params).encode(), given)
        for variant in url_variants(url)
    )
