"""The framework floor: a minimal typer app that prints a JSON dict, or a one-row Rich table."""

import json

import typer

app = typer.Typer(add_completion=False)


@app.command()
def main(table: bool = False) -> None:
    if table:
        from rich.console import Console
        from rich.table import Table

        t = Table("verdict", "kv_bytes")
        t.add_row("over", "4294967296")
        Console().print(t)
    else:
        print(json.dumps({"verdict": "over", "kv_bytes": 4294967296}))


if __name__ == "__main__":
    app()
