from kg.cli.main import app

app(prog_name="kg")
