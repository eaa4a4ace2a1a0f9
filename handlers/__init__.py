"""HTTP only: one module per resource; parse, validate and authorize, call the store, render."""
