"""Command groups registered on the main Typer app (each module: `register(app)`)."""
