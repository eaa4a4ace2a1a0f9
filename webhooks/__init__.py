"""Webhook delivery: outbound address rules (networks.py) and the HTTP transport (transport.py)."""
