"""One module per `perfci` command; `cli.py` assembles them. Shared options are
declared once in `options.py`."""
