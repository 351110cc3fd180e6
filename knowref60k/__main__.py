"""`python -m knowref60k ...`: the command line, from any environment that can import the package (model
evaluation runs so from `.venv-eval`, which has torch)."""

from knowref60k.cli.app import app

app(prog_name="knowref60k")
