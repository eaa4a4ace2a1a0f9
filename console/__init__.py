"""The interactive reference: Jinja templates, static assets and the view model they render."""
