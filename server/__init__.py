"""The application's assembly and its processes: app, config, serve, gate, auth, logs, rate
limit, the command line (cli, admin) and the demo."""
