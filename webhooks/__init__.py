"""Webhook delivery: the change events pushed to the integrators' receivers, signed (Standard
Webhooks, signing.py), retried on a schedule (schedule.py) by the dispatcher every serving
process runs (dispatcher.py), and sent only where the operator allows: outbound address rules
(networks.py) and the HTTP transport that connects to the address it checked (transport.py). It
talks to receivers as telephony/ talks to the provider; the store keeps endpoints, deliveries
and their attempts."""
