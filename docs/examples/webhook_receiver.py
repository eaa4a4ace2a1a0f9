import os
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

webhook = Webhook(os.environ["WEBHOOK_SECRET"])  # the whsec_... from the endpoint's creation
seen: set[str] = set()  # webhook-ids already handled: keep them in your database


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            event = webhook.verify(body, dict(self.headers))
        except WebhookVerificationError:
            self.send_response(400)
        else:
            if self.headers["webhook-id"] not in seen:  # a retry or a recovery: done already
                seen.add(self.headers["webhook-id"])
                print(event["type"], event["data"]["id"], flush=True)  # your work here
            self.send_response(204)
        self.end_headers()


HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver).serve_forever()
