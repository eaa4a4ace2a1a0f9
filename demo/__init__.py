"""`workspace-api demo`: the API on the embedded store with deterministic demo data.

vocabulary.py the names and texts; data.py the documents made of them, timelines.py their
activities; seeding.py writes them through the store; live.py
keeps adding calls while the demo runs; console.py reads admin commands on stdin; runner.py
is the process (start, keys file, banner, shutdown); command.py its options, which cli/
registers on the server's command line.
"""
